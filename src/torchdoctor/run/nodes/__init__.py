"""`torchdoctor run` across nodes: every node's runner shares what its ranks wrote.

On one host the runner reads every rank's record files from its run folder (run/records.py,
run/ranks.py). When the job spans several runners (several nodes, each started under
`torchdoctor run`), a helper process next to each runner (`mirror.py`) copies the node's files
to the others through what the job already runs: a client of the job's own TCPStore (the
store its ranks rendezvous through, under a key prefix of ours), or a folder on a shared file
system (`--shared-dir`). The runner of global rank 0's node then reads the other nodes' files
from `<run folder>/nodes/<slot>/` as if they were its own: its hang watch, the comparisons of the
ranks and its report (the merged one) cover every rank of the job. The other nodes read only
rank 0's node's card (to stop with it when it stops a deadlocked job) and report their own ranks.

Nothing here is sent through the job's process groups, and nothing in the ranks talks to a
store: the helper is a separate process. Global rank 0 only waits, at its exit and for a few
seconds at most, until the helper says every rank's last records have arrived (the store lives
in rank 0's node; `final.py`).

No torch here (the helper imports it to reach a TCPStore; see board.py).
"""
