"""Crashes real beginner programs hit, explained with their cause (issue 28 §2): an optimizer
given an empty parameter list, and why it is empty."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.run.test_crash import explained, line_of

# --- "optimizer got an empty parameter list" ------------------------------------------------------


class ListNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = [nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class DictNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = {"a": nn.Linear(4, 2), "b": nn.Linear(4, 2)}


def test_layers_in_a_plain_list_point_at_the_list() -> None:
    def build() -> None:
        model = ListNet()
        torch.optim.SGD(model.parameters(), lr=0.1)

    finding = explained(build)
    assert finding.rule == "TD122" and finding.line == line_of("self.layers = [", ListNet)
    assert finding.message.startswith("2 `Linear` modules stored in a plain list in `self.layers` are not registered, "
                                      "so `model.parameters()` is empty and `SGD` got an empty parameter list, crashes at ")
    assert "nn.ModuleList" in finding.hint


def test_layers_in_a_plain_dict_of_a_trainer_attribute() -> None:
    class Trainer:
        def __init__(self) -> None:
            self.net = DictNet()
            self.optimizer = torch.optim.Adam(self.net.parameters())

    finding = explained(Trainer)
    assert finding.rule == "TD122" and finding.line == line_of("self.heads = {", DictNet)
    assert "in a plain dict in `self.heads`" in finding.message and "`self.net.parameters()` is empty" in finding.message


def test_every_parameter_frozen_behind_a_requires_grad_filter() -> None:
    def build() -> None:
        model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
        for p in model.parameters():
            p.requires_grad = False
        torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)

    finding = explained(build)
    assert finding.rule == "TD315" and finding.line == line_of("torch.optim.Adam(", build)
    assert finding.message == ("all 4 parameter tensors of `model` have requires_grad=False, so `Adam` got an empty parameter list "
                               "from `filter(lambda p: p.requires_grad, model.parameters())`")


def test_a_parameters_generator_used_up_before_the_optimizer_points_at_it() -> None:
    def build() -> None:
        model = nn.Linear(4, 2)
        params = model.parameters()
        print(sum(p.numel() for p in params))
        torch.optim.SGD(params, lr=0.1)

    finding = explained(build)
    assert finding.rule == "TD180" and finding.line == line_of("params = model.parameters()", build)
    first = line_of("print(sum(", build)
    assert finding.message.startswith(f"`params` is a one-shot iterator (`model.parameters()`): line {first} uses it up, "
                                      "so `SGD` got an empty parameter list, crashes at ")
    assert finding.hint == "Keep a list where it is made: `params = list(model.parameters())`."


def test_a_model_without_any_parameter() -> None:
    def build() -> None:
        model = nn.Sequential(nn.ReLU(), nn.Flatten())
        torch.optim.SGD(model.parameters(), lr=0.1)

    finding = explained(build)
    assert finding.rule == "TD315" and "`model` (Sequential) has no registered parameters" in finding.message


@pytest.mark.parametrize("case", ["empty-list", "partly-frozen-list"])
def test_an_empty_list_the_source_cannot_tie_to_a_model_stays_the_plain_crash(case: str) -> None:
    """Nothing ties the empty list to a model that explains it: the plain crash (TD001)."""
    def build() -> None:
        model = nn.Linear(4, 2)
        params = [] if case == "empty-list" else [p for p in model.parameters() if p.requires_grad and p.dim() > 5]
        torch.optim.SGD(params, lr=0.1)

    finding = explained(build)
    assert finding.rule == "TD001"


def test_a_model_with_registered_layers_builds_its_optimizer() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
    params = list(model.parameters())
    print(sum(p.numel() for p in params))
    torch.optim.SGD(params, lr=0.1)



@pytest.mark.parametrize(("given", "message"), [
    ("model.parameters", "`model.parameters` is passed to `SGD` without being called: the optimizer gets the method, not the parameters"),
    ("model", "`model` is passed to `SGD` itself: an optimizer takes the module's parameters, not the module"),
])
def test_an_optimizer_given_the_method_or_the_module(given: str, message: str) -> None:
    model = nn.Sequential(nn.Linear(4, 2)) if given == "model" else nn.Linear(4, 2)

    def build() -> None:
        if given == "model":
            torch.optim.SGD(model, lr=0.1)  # type: ignore[arg-type]
        else:
            torch.optim.SGD(model.parameters, lr=0.1)  # type: ignore[arg-type]

    finding = explained(build)
    assert finding.rule == "TD152" and finding.message == message and "`model.parameters()`" in finding.hint


def test_an_optimizer_given_a_tensor_list_of_another_kind_stays_the_plain_crash() -> None:
    def build() -> None:
        weights = 3
        torch.optim.SGD(weights, lr=0.1)  # type: ignore[arg-type]

    assert explained(build).rule == "TD001"

# --- a flatten of the wrong size: "shape '[-1, 320]' is invalid for input of size 2000" ------------


class LeNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 20, 5)
        self.fc1 = nn.Linear(320, 50)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(self.conv(x), 2)
        x = x.view(-1, 320)
        return self.fc1(x)


def test_a_flatten_for_another_input_size_names_the_size_per_sample_and_the_linear() -> None:
    net = LeNet()
    finding = explained(lambda: net(torch.randn(4, 1, 14, 14)))  # (4, 20, 5, 5): 500 values per sample
    assert finding.rule == "TD417" and finding.line == line_of("x = x.view(-1, 320)", LeNet)
    assert finding.message == "`x.view(-1, 320)` wants 320 values per sample but `x` has shape [4, 20, 5, 5], 500 per sample"
    assert "`torch.flatten(x, 1)`" in finding.hint and "Linear `fc1` with `in_features=500`" in finding.hint


def test_a_flatten_with_no_linear_of_that_size_still_says_the_size() -> None:
    def step() -> None:
        features = torch.randn(3, 7, 7)
        features.reshape(-1, 10)

    finding = explained(step)
    assert finding.rule == "TD417" and finding.line == line_of("features.reshape(-1, 10)", step)
    assert "49 per sample" in finding.message and "size the layer after it for 49 features" in finding.hint


def test_other_invalid_shapes_are_not_called_a_flatten() -> None:
    """Not a per-sample flatten ([3, 10]), or a 1-D tensor: nothing says what a sample is (TD571
    names the shapes without one)."""
    def fixed_shape() -> None:
        x = torch.randn(4, 10)
        x.reshape(3, 10)

    def one_dimension() -> None:
        y = torch.randn(10)
        y.view(-1, 3)

    assert explained(fixed_shape).rule == "TD571"
    assert explained(one_dimension).rule == "TD571"



class Folding(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.fc = nn.Linear(784, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(self.conv(x), 2)  # (N, 8, 14, 14): 1568 values per sample
        x = x.view(-1, 784)
        return self.fc(x)


def test_a_flatten_that_folds_samples_into_the_batch_is_found_from_the_loss() -> None:
    model = Folding()

    def step() -> None:
        out = model(torch.randn(32, 1, 28, 28))
        nn.CrossEntropyLoss()(out, torch.zeros(32, dtype=torch.long))

    finding = explained(step)
    assert finding.rule == "TD418" and finding.line == line_of("x = x.view(-1, 784)", Folding)
    assert finding.message.startswith("CrossEntropyLoss cannot pair input and target: the input has 64 rows but the target 32; "
                                      "`x.view(-1, 784)` in `Folding.forward` folds each sample into 2 rows, crashes at ")


def test_targets_of_another_batch_without_a_folding_view_stay_at_the_loss() -> None:
    model = TwoLayers()

    def step() -> None:
        out = model(torch.randn(16, 4))
        nn.CrossEntropyLoss()(out, torch.zeros(32, dtype=torch.long))

    finding = explained(step)
    assert finding.rule == "TD418" and finding.line == line_of("nn.CrossEntropyLoss()(out", step) and "folds" not in finding.message

# --- a convolution given the wrong number of dimensions ----------------------------------------


def test_an_image_without_batch_and_channel_into_a_single_channel_conv() -> None:
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU())

    def step() -> None:
        image = torch.randn(28, 28)
        model(image)

    finding = explained(step)
    assert finding.rule == "TD417" and finding.line == line_of("model(image)", step)
    assert finding.message == "Conv2d `0` expects a 4-D (N, C, ...) input, or 3-D for one sample, but gets `image` of shape [28, 28]"
    assert "`image.unsqueeze(0).unsqueeze(0)`" in finding.hint and "[1, 1, 28, 28]" in finding.hint


def test_an_image_without_batch_and_channel_into_a_color_conv() -> None:
    conv = nn.Conv2d(3, 4, 3)
    finding = explained(lambda: conv(torch.randn(32, 32)))
    assert finding.rule == "TD417" and "wants 3 channels" in finding.hint and "in_channels=1" in finding.hint


def test_a_dimension_too_many_into_a_conv() -> None:
    def step() -> None:
        conv = nn.Conv1d(1, 4, 3)
        x = torch.randn(8, 1, 50).unsqueeze(1)
        conv(x)

    finding = explained(step)
    assert finding.rule == "TD417" and "`x` of shape [8, 1, 1, 50]" in finding.message and "`x.squeeze(1)`" in finding.hint


def test_a_functional_convolution_without_a_layer_stays_the_plain_crash() -> None:
    def step() -> None:
        torch.nn.functional.conv2d(torch.randn(28, 28), torch.randn(4, 1, 3, 3))

    finding = explained(step)
    assert finding.rule == "TD001"


def test_a_batch_of_images_into_a_conv_runs() -> None:
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU())
    assert model(torch.randn(28, 28)[None, None]).shape == (1, 4, 26, 26)



# --- recurrent and batch-norm layers built for another number of features ------------------------


def test_an_lstm_built_for_another_input_size() -> None:
    lstm = nn.LSTM(input_size=10, hidden_size=8, batch_first=True)
    finding = explained(lambda: lstm(torch.randn(4, 7, 5)))
    assert finding.rule == "TD417"
    assert finding.message == "LSTM expects input_size=10 but gets 5 features in the last dimension (input shape [4, 7, 5])"
    assert "`input_size=5`" in finding.hint


def test_an_lstm_given_its_features_in_the_middle() -> None:
    gru = nn.GRU(input_size=10, hidden_size=8, batch_first=True)
    finding = explained(lambda: gru(torch.randn(4, 10, 7)))
    assert finding.rule == "TD417" and "`x.transpose(1, -1)`" in finding.hint


def test_a_batch_norm_built_for_another_number_of_features() -> None:
    model = nn.Sequential(nn.Linear(10, 20), nn.BatchNorm1d(10))
    finding = explained(lambda: model(torch.randn(4, 10)))
    assert finding.rule == "TD417"
    assert finding.message == "BatchNorm1d `1` expects num_features=10 but gets 20 channels (input shape [4, 20])"
    assert "`num_features=20`" in finding.hint


class HeadNorm(nn.LayerNorm):
    """A LayerNorm of the user's own (as code bases write for float32 norms): the crash is in its forward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class Attention(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.q_norm = HeadNorm(dim)
        self.k_norm = nn.LayerNorm(dim // heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = x.view(x.shape[0], x.shape[1], self.heads, -1).transpose(1, 2)
        return self.q_norm(q) + self.k_norm(q)


def test_a_layer_norm_built_for_other_trailing_dimensions_is_pointed_at_where_it_was_built() -> None:
    attention = Attention()
    finding = explained(lambda: attention(torch.randn(4, 17, 64)))
    assert finding.rule == "TD417" and finding.line == line_of("self.q_norm = HeadNorm(dim)", Attention.__init__)
    assert "expects normalized_shape=[64] but gets an input ending in [32] (shape [4, 2, 17, 32])" in finding.message
    assert ", crashes at " in finding.message and "`nn.LayerNorm([32])`" in finding.hint


def test_a_layer_norm_called_at_the_top_level_is_explained_at_its_call() -> None:
    norm = nn.LayerNorm(8)
    finding = explained(lambda: norm(torch.randn(2, 4)))
    assert finding.rule == "TD417" and "expects normalized_shape=[8] but gets an input ending in [4]" in finding.message


def test_a_hidden_state_made_for_a_fixed_batch_size_meets_the_short_last_batch() -> None:
    gru = nn.GRU(input_size=4, hidden_size=8, batch_first=True)
    batches = [torch.randn(16, 5, 4), torch.randn(16, 5, 4), torch.randn(3, 5, 4)]

    def train() -> None:
        batch_size = 16
        for x in batches:
            h0 = torch.zeros(1, batch_size, 8)
            gru(x, h0)

    finding = explained(train)
    assert finding.rule == "TD417" and finding.line == line_of("h0 = torch.zeros(1, batch_size, 8)", train)
    assert "gets a hidden state [1, 16, 8] made for a batch of 16 with an input batch of 3" in finding.message
    assert "`torch.zeros(1, batch_size, 8)`" in finding.message and ", crashes at " in finding.message


def test_an_lstm_state_carried_over_from_a_batch_of_another_size() -> None:
    lstm = nn.LSTM(input_size=4, hidden_size=2)

    def run() -> None:
        state = (torch.zeros(1, 1, 2), torch.zeros(1, 1, 2))
        out, state = lstm(torch.randn(5, 1, 4), state)
        out, state = lstm(torch.randn(5, 3, 4), state)

    finding = explained(run)
    assert finding.rule == "TD417" and "made for a batch of 1 with an input batch of 3" in finding.message


def test_a_functional_batch_norm_with_wrong_statistics_stays_the_plain_crash() -> None:
    def step() -> None:
        torch.nn.functional.batch_norm(torch.randn(4, 20), torch.zeros(10), torch.ones(10), training=True)

    assert explained(step).rule == "TD001"

# --- backward() of several values: "grad can be implicitly created only for scalar outputs" ------


def test_backward_of_per_sample_losses_names_the_loss_built_with_reduction_none() -> None:
    def step() -> None:
        model = nn.Linear(3, 1)
        criterion = nn.MSELoss(reduction="none")
        loss = criterion(model(torch.randn(5, 3)), torch.randn(5, 1))
        loss.backward()

    finding = explained(step)
    assert finding.rule == "TD320" and finding.line == line_of("loss.backward()", step)
    assert finding.message == ("`loss.backward()` needs a single number, but `loss` has shape [5, 1] (5 values): "
                               "`criterion` is built with reduction='none'")
    assert "`loss.mean().backward()`" in finding.hint


def test_backward_of_a_model_output() -> None:
    def step() -> None:
        out = nn.Linear(3, 2)(torch.randn(5, 3))
        out.backward()

    finding = explained(step)
    assert finding.rule == "TD320" and finding.message == "`out.backward()` needs a single number, but `out` has shape [5, 2] (10 values)"
    assert "reduction" not in finding.message


def test_backward_of_an_unnamed_loss() -> None:
    def step() -> None:
        out = nn.Linear(3, 4)(torch.randn(5, 3))
        nn.functional.cross_entropy(out, torch.zeros(5, dtype=torch.long), reduction="none").backward()

    finding = explained(step)
    assert finding.rule == "TD320" and finding.message.startswith("`backward()` needs a single number, but the tensor it is called on has shape [5]")


def test_autograd_grad_of_several_values_stays_the_plain_crash() -> None:
    """torch.autograd.grad wants grad_outputs there: another fix, not this explanation."""
    def step() -> None:
        x = torch.randn(5, requires_grad=True)
        torch.autograd.grad(x * 2, x)

    assert explained(step).rule == "TD001"


def test_backward_of_a_reduced_loss_runs() -> None:
    criterion = nn.MSELoss(reduction="none")
    model = nn.Linear(3, 1)
    criterion(model(torch.randn(5, 3)), torch.randn(5, 1)).mean().backward()
    assert model.weight.grad is not None



# --- an element-wise loss given input and target it cannot pair ---------------------------------


def test_bce_with_logits_given_a_column_of_logits_and_flat_labels() -> None:
    model = nn.Linear(4, 1)

    def step() -> None:
        x, labels = torch.randn(16, 4), torch.randint(0, 2, (16,)).float()
        logits = model(x)
        nn.BCEWithLogitsLoss()(logits, labels)

    finding = explained(step)
    assert finding.rule == "TD104" and finding.line == line_of("nn.BCEWithLogitsLoss()(logits, labels)", step)
    assert finding.message == "BCEWithLogitsLoss needs its input and target in one shape, but gets input [16, 1] and target [16]"
    assert "`logits.squeeze(1)`" in finding.hint


@pytest.mark.filterwarnings("ignore:Using a target size:UserWarning")  # torch warns before it fails
def test_mse_given_another_number_of_samples() -> None:
    def step() -> None:
        nn.MSELoss()(torch.randn(16, 1), torch.randn(32, 1))

    finding = explained(step)
    assert finding.rule == "TD104" and finding.message == "MSELoss cannot pair input [16, 1] with target [32, 1]: 16 samples against 32"


def test_a_size_mismatch_outside_a_loss_stays_the_plain_crash() -> None:
    def step() -> None:
        torch.randn(5, 1) - torch.randn(4, 1)

    assert explained(step).rule == "TD001"

# --- a module called with a NumPy array, a list, or a whole batch ---------------------------------


class TwoLayers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def test_a_numpy_array_into_a_model_points_at_the_call() -> None:
    import numpy as np

    model = TwoLayers()

    def step() -> None:
        data = np.random.rand(8, 4)
        model(data)  # type: ignore[arg-type]

    finding = explained(step)
    assert finding.rule == "TD560" and finding.line == line_of("model(data)", step)
    assert finding.message == "TwoLayers is given `data`, a NumPy array (float64, shape [8, 4]), not a tensor"
    assert "`torch.from_numpy(data).float()`" in finding.hint


def test_a_numpy_array_into_a_convolution_with_its_overloads_message() -> None:
    import numpy as np

    conv = nn.Conv2d(1, 2, 3)

    def step() -> None:
        images = np.zeros((2, 1, 8, 8), dtype=np.float32)
        conv(images)  # type: ignore[arg-type]

    finding = explained(step)
    assert finding.rule == "TD560" and "`images`, a NumPy array (float32" in finding.message
    assert "`torch.from_numpy(images)`" in finding.hint


def test_a_list_of_numbers_into_a_linear() -> None:
    layer = nn.Linear(3, 1)

    def step() -> None:
        rows = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        layer(rows)  # type: ignore[arg-type]

    finding = explained(step)
    assert finding.rule == "TD560" and finding.message.endswith("is given `rows`, a Python list of numbers, not a tensor")


def test_a_whole_data_loader_batch_into_the_model() -> None:
    from torch.utils.data import DataLoader, TensorDataset

    model = nn.Sequential(nn.Linear(4, 2))
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.zeros(8)), batch_size=4)

    def epoch() -> None:
        for batch in loader:
            model(batch)

    finding = explained(epoch)
    assert finding.rule == "TD560" and finding.line == line_of("model(batch)", epoch)
    assert "`batch`, a list of 2 tensors (shapes [4, 4], [4])" in finding.message and "for inputs, labels in loader" in finding.hint


def test_a_list_of_tensors_without_a_data_loader_is_to_be_stacked() -> None:
    layer = nn.Linear(4, 2)

    def step() -> None:
        samples = [torch.randn(4), torch.randn(4)]
        layer(samples)  # type: ignore[arg-type]

    finding = explained(step)
    assert finding.rule == "TD560" and "`torch.stack(samples)`" in finding.hint


def test_a_non_tensor_to_a_torch_function_outside_a_module_stays_the_plain_crash() -> None:
    import numpy as np

    def step() -> None:
        torch.nn.functional.relu(np.ones(3))  # type: ignore[arg-type]

    assert explained(step).rule == "TD001"


# --- class indices of shape (N, 1): "0D or 1D target tensor expected, multi-target not supported" --


def test_a_column_of_class_indices_into_cross_entropy() -> None:
    def step() -> None:
        logits = torch.randn(4, 3, requires_grad=True)
        labels = torch.randint(0, 3, (4, 1))
        nn.CrossEntropyLoss()(logits, labels)

    finding = explained(step)
    assert finding.rule == "TD418" and finding.line == line_of("nn.CrossEntropyLoss()(logits, labels)", step)
    assert finding.message == ("CrossEntropyLoss cannot pair input and target: `labels` has shape [4, 1], a column of class indices, "
                               "but the target of 4-row logits must be 1-D")
    assert "`labels.squeeze(1)`" in finding.hint


def test_a_column_of_class_indices_stored_as_floats_is_told_to_become_integers() -> None:
    def step() -> None:
        logits = torch.randn(4, 3, requires_grad=True)
        labels = torch.tensor([[0.0], [2.0], [1.0], [1.0]])  # a label column read from a table
        nn.CrossEntropyLoss()(logits, labels)

    finding = explained(step)
    assert finding.rule == "TD418" and "a column of class indices stored as floats" in finding.message
    assert "`labels.squeeze(1).long()`" in finding.hint


def test_a_float_column_that_is_not_class_indices_is_not_called_one() -> None:
    def step() -> None:
        nn.CrossEntropyLoss()(torch.randn(4, 3), torch.rand(4, 1))

    assert explained(step).rule == "TD001"


def test_a_multi_column_integer_target_is_not_called_a_column() -> None:
    def step() -> None:
        log_probs = torch.randn(4, 3).log_softmax(1)
        torch.nn.functional.nll_loss(log_probs, torch.randint(0, 3, (4, 2)))

    assert explained(step).rule == "TD001"


# --- a model called with arguments its forward() does not take, or its class called -------------


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * mask


def test_labels_passed_to_the_model_name_the_forward_signature() -> None:
    model = TwoLayers()

    def step() -> None:
        x, y = torch.randn(8, 4), torch.zeros(8)
        model(x, y)

    finding = explained(step)
    assert finding.rule == "TD561" and finding.line == line_of("model(x, y)", step)
    assert finding.message == "TwoLayers is called with 2 positional inputs (x, y), more than its `forward(self, x)` takes"


def test_a_missing_forward_argument_and_an_unknown_keyword() -> None:
    model = Masked()

    def missing() -> None:
        x = torch.randn(8, 4)
        model(x)

    finding = explained(missing)
    assert finding.rule == "TD561" and "called with (x), but its `forward(self, x, mask)`" in finding.message
    assert finding.message.endswith("also needs `mask`") and "`mask=None`" in finding.hint

    def keyword() -> None:
        x = torch.randn(8, 4)
        model(x, mask=torch.ones(2), labels=torch.zeros(8))

    finding = explained(keyword)
    assert finding.rule == "TD561" and "the keyword `labels`" in finding.message


def test_a_type_error_inside_forward_is_not_a_call_mismatch() -> None:
    class Broken(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return helper(x, 2)

    def helper(x: torch.Tensor) -> torch.Tensor:
        return x

    assert explained(lambda: Broken()(torch.randn(2))).rule == "TD001"


def test_a_model_class_called_on_its_input_points_at_the_binding() -> None:
    def step() -> None:
        model = TwoLayers
        model(torch.randn(8, 4))  # type: ignore[call-arg]

    finding = explained(step)
    assert finding.rule == "TD562" and finding.line == line_of("model = TwoLayers", step)
    assert finding.message.startswith("`model` is the class `TwoLayers`, not a model: calling it builds a new `TwoLayers`")
    assert "`model = TwoLayers()`" in finding.hint


def test_a_model_built_with_wrong_constructor_arguments_is_not_called_a_class() -> None:
    def step() -> None:
        TwoLayers(16)  # type: ignore[call-arg]

    assert explained(step).rule == "TD001"


# --- .item() of several values: "a Tensor with 16 elements cannot be converted to Scalar" -------


def test_item_of_a_comparison_names_the_expression_and_its_values() -> None:
    def step() -> None:
        predicted, labels = torch.randint(0, 3, (16,)), torch.randint(0, 3, (16,))
        (predicted == labels).item()

    finding = explained(step)
    assert finding.rule == "TD563" and finding.line == line_of("(predicted == labels).item()", step)
    assert finding.message == "`(predicted == labels).item()` needs a tensor of one value, but `predicted == labels` has 16 values"
    assert "`.sum().item()`" in finding.hint


def test_float_of_a_named_tensor_and_item_of_an_empty_one() -> None:
    def converted() -> None:
        losses = torch.ones(4)
        float(losses)

    finding = explained(converted)
    assert finding.rule == "TD563" and finding.message == "`float(losses)` needs a tensor of one value, but `losses` has 4 values"

    def empty() -> None:
        selected = torch.ones(4)[torch.zeros(4, dtype=torch.bool)]
        selected.item()

    assert explained(empty).message == "`selected.item()` needs a tensor of one value, but `selected` is empty"


def test_item_inside_a_comprehension_names_the_tensor() -> None:
    def step() -> None:
        losses = torch.ones(3)
        print([losses.item() for _ in range(2)])

    finding = explained(step)
    assert finding.rule == "TD563" and finding.line == line_of("[losses.item() for", step)
    assert finding.message == "`losses.item()` needs a tensor of one value, but `losses` has 3 values"


def test_two_items_on_one_line_stay_the_plain_crash() -> None:
    """Nothing says which of the two failed."""
    def step() -> None:
        a, b = torch.ones(1), torch.ones(3)
        print(a.item(), (b * 2).item())

    assert explained(step).rule == "TD001"


def test_float_of_an_expression_stays_the_plain_crash() -> None:
    def step() -> None:
        float(torch.ones(3) * 2)

    assert explained(step).rule == "TD001"


def test_backward_of_per_sample_binary_cross_entropies_names_the_loss() -> None:
    def step() -> None:
        criterion = nn.BCEWithLogitsLoss(reduction="none")
        logits = nn.Linear(3, 1)(torch.randn(4, 3))
        loss = criterion(logits, torch.ones(4, 1))
        loss.backward()

    finding = explained(step)
    assert finding.rule == "TD320" and finding.message.endswith("`criterion` is built with reduction='none'")


def test_a_batch_norm_of_the_wrong_kind_for_its_input() -> None:
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm1d(8))
    finding = explained(lambda: model(torch.randn(4, 3, 10, 10)))
    assert finding.rule == "TD417"
    assert finding.message == "BatchNorm1d `1` expects a 2-D or 3-D input but gets a 4-D input [4, 8, 8, 8]"
    assert "`nn.BatchNorm2d(8)`" in finding.hint


def test_an_instance_norm_given_too_few_dimensions_stays_the_plain_crash() -> None:
    norm = nn.InstanceNorm2d(8)
    assert explained(lambda: norm(torch.randn(8))).rule == "TD001"


# --- an RNN given an input of neither 2 nor 3 dimensions -------------------------------------------


def test_an_lstm_given_a_dimension_too_many_is_told_which_to_squeeze() -> None:
    lstm = nn.LSTM(10, 20, batch_first=True)

    def step() -> None:
        sequences = torch.randn(4, 7, 10).unsqueeze(1)
        lstm(sequences)

    finding = explained(step)
    assert finding.rule == "TD417" and finding.line == line_of("lstm(sequences)", step)
    assert finding.message == "LSTM expects a 3-D input (batch, seq, features), or 2-D for one sequence, but gets `sequences` of shape [4, 1, 7, 10]"
    assert "`sequences.squeeze(1)`" in finding.hint


def test_a_gru_given_images_is_told_its_order() -> None:
    gru = nn.GRU(8, 16)

    def step() -> None:
        images = torch.randn(2, 3, 8, 8)
        gru(images)

    finding = explained(step)
    assert finding.rule == "TD417" and "(seq, batch, features)" in finding.message and "Reshape `images`" in finding.hint
