"""`torchdoctor trace`: from the user's line to the aten ops it dispatched, their time, and
each op's path through native_functions.yaml and the dispatcher to its kernels."""
