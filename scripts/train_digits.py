"""Train the default digits CNN with torch and write `planner/zoo/digits.onnx`.

The ONNX graph is written with `onnx.helper` from the trained weights (BatchNormalization is
kept as a node for the front end to fold). Run from the repository root:

    python scripts/train_digits.py

Requires torch (a training-only dependency, not one of the project's).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from planner.zoo.digits import DIGITS_MODEL_PATH, load_digits_split  # noqa: E402

SEED = 0
EPOCHS = 40
BATCH_SIZE = 32
LEARNING_RATE = 3e-3
OPSET = 17
IR_VERSION = 8  # the IR version that introduced opset 17; readable by older onnx/onnxruntime
MAX_ABS_DIFF = 1e-4


class DigitsNet(nn.Module):
    """Conv-BN-Relu, strided Conv-Relu, Conv-Relu, MaxPool, Flatten, Gemm: (N,1,8,8) -> (N,10)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(32, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits for a batch of images."""
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.conv2(x))
        x = torch.relu(self.conv3(x))
        return self.fc(torch.flatten(self.pool(x), 1))


def train(model: DigitsNet, x: torch.Tensor, y: torch.Tensor) -> None:
    """Adam with cosine-annealed learning rate, deterministic shuffling."""
    generator = torch.Generator().manual_seed(SEED)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(EPOCHS):
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x), BATCH_SIZE):
            batch = order[start:start + BATCH_SIZE]
            optimizer.zero_grad()
            loss_fn(model(x[batch]), y[batch]).backward()
            optimizer.step()
        scheduler.step()
    model.eval()


def torch_logits(model: DigitsNet, x: np.ndarray) -> np.ndarray:
    """Evaluation-mode logits as float32 numpy."""
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def to_onnx(model: DigitsNet) -> onnx.ModelProto:
    """Build the inference graph from the trained weights with `onnx.helper`."""
    state = {name: t.detach().numpy().astype(np.float32) for name, t in model.state_dict().items()
             if t.is_floating_point()}
    initializers = [numpy_helper.from_array(array, name) for name, array in state.items()]
    nodes = [
        helper.make_node("Conv", ["input", "conv1.weight"], ["conv1_out"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization",
                         ["conv1_out", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"],
                         ["bn1_out"], name="bn1", epsilon=model.bn1.eps),
        helper.make_node("Relu", ["bn1_out"], ["relu1_out"], name="relu1"),
        helper.make_node("Conv", ["relu1_out", "conv2.weight", "conv2.bias"], ["conv2_out"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["conv2_out"], ["relu2_out"], name="relu2"),
        helper.make_node("Conv", ["relu2_out", "conv3.weight", "conv3.bias"], ["conv3_out"], name="conv3",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["conv3_out"], ["relu3_out"], name="relu3"),
        helper.make_node("MaxPool", ["relu3_out"], ["pool_out"], name="pool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool_out"], ["flatten_out"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flatten_out", "fc.weight", "fc.bias"], ["logits"], name="fc",
                         alpha=1.0, beta=1.0, transB=1),
    ]
    graph = helper.make_graph(
        nodes, "digits_cnn",
        inputs=[helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 8, 8])],
        outputs=[helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        initializer=initializers,
    )
    onnx_model = helper.make_model(graph, producer_name="hwgen-train-digits",
                                   opset_imports=[helper.make_opsetid("", OPSET)])
    onnx_model.ir_version = IR_VERSION
    onnx_model.doc_string = "8x8 digits classifier (sklearn load_digits), input in [0, 1], output logits"
    onnx.checker.check_model(onnx_model, full_check=True)
    return onnx_model


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Top-1 accuracy."""
    return float((logits.argmax(axis=1) == labels).mean())


def main() -> None:
    """Train, export, verify against onnxruntime, and report accuracies."""
    start = time.perf_counter()
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    x_train, y_train, x_test, y_test = load_digits_split()

    model = DigitsNet()
    train(model, torch.from_numpy(x_train), torch.from_numpy(y_train))
    test_logits = torch_logits(model, x_test)
    print(f"torch float accuracy: train {accuracy(torch_logits(model, x_train), y_train):.4f}, "
          f"test {accuracy(test_logits, y_test):.4f}")

    onnx_model = to_onnx(model)
    onnx.save(onnx_model, DIGITS_MODEL_PATH)
    session = ort.InferenceSession(str(DIGITS_MODEL_PATH), providers=["CPUExecutionProvider"])
    ort_logits = session.run(["logits"], {"input": x_test})[0]
    diff = float(np.abs(ort_logits - test_logits).max())
    if diff >= MAX_ABS_DIFF:
        raise SystemExit(f"onnxruntime and torch disagree: max abs diff {diff:.3g}")
    print(f"onnxruntime float test accuracy {accuracy(ort_logits, y_test):.4f} "
          f"(max abs diff vs torch {diff:.2e})")
    print(f"wrote {DIGITS_MODEL_PATH} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
