"""The adversarial cases: each a bad (or tricky) input, the command line that meets it, and
what must happen: exit 2 with one error line naming every culprit, or a correct result.

`@/` in an argument is the shared fixtures folder (`fixtures.write_common`); other relative
paths are in the case's own folder, which holds `files` and must be unchanged after an error.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper

from adversarial import fixtures as fx

MODEL, X, CALIB = "@/tiny.onnx", "@/x.npy", "@/calib.npy"


@dataclass
class Case:
    category: str
    name: str
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    expect: str = "error"
    """"error": exit 2 with one error line naming every culprit, nothing written; "ok": exit 0
    and every check holds."""
    culprits: tuple[str, ...] = ()
    checks: tuple[tuple, ...] = ()
    """For "ok": ("stdout", text), ("stderr", text), ("same_npy", a, b), ("json", key, value),
    ("sweep_like", folder, reference folder), ("files", names...) (exactly these outputs appear)."""
    kind: str = "cli"
    """"cli": `argv` through `cli.main.main`; "python": `argv[0]` names a function of
    `adversarial.link`, called with the rest."""
    folders: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.category}/{self.name}"

    def to_json(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k != "files"}
        return data


# ----------------------------------------------------------------------------- models
def duplicate_names() -> list[Case]:
    cases = []
    tiny, bn = fx.tiny(), fx.tiny_bn_fc()
    models = {
        "two_convs": (fx.renamed(tiny, {0: "conv", 2: "conv"}), "conv", 2),
        "conv_and_relu": (fx.renamed(tiny, {0: "blk", 1: "blk", 2: "blk"}), "blk", 2),
        "literal_suffix": (fx.renamed(tiny, {0: "c", 1: "c#1", 2: "c"}), "c", 2),
        "bn_fc": (fx.renamed(bn, {0: "L", len(bn.graph.node) - 1: "L"}), "L", 2),
    }
    for label, (model, name, count) in models.items():
        files = {"m.onnx": fx.model_bytes(model)}
        suffixed = [f"{name}#{k}" for k in range(1, count + 1)]
        cases += [
            Case("duplicate_names", f"{label}/inspect", ["inspect", "m.onnx"], files, "ok", checks=[("stdout", s) for s in suffixed]),
            Case("duplicate_names", f"{label}/simulate", ["simulate", "m.onnx", "--json", "--calibration", CALIB], files, "ok",
                 checks=[("json", "bit_exact", True)]),
            Case("duplicate_names", f"{label}/infer_isa_vs_golden",
                 ["infer", "m.onnx", "--engine", "isa", "--input", X, "--output", "isa.npy", "--calibration", CALIB,
                  "&&", "infer", "m.onnx", "--input", X, "--output", "golden.npy", "--calibration", CALIB],
                 files, "ok", checks=[("same_npy", "isa.npy", "golden.npy"), ("files", "isa.npy", "golden.npy")]),
            Case("duplicate_names", f"{label}/layer_ambiguous", ["simulate", "m.onnx", "--layer", name, "--calibration", CALIB],
                 files, culprits=(repr(name), *suffixed)),
            Case("duplicate_names", f"{label}/plan_json", ["plan", "m.onnx", "--json"], files, "ok",
                 checks=[("stdout", f'"{s}"') for s in suffixed]),
        ]
        for suffix in suffixed:
            cases.append(Case("duplicate_names", f"{label}/layer_{suffix}", ["simulate", "m.onnx", "--layer", suffix,
                              "--json", "--calibration", CALIB], files, "ok", checks=[("json", "bit_exact", True)]))
    return cases


def non_finite() -> list[Case]:
    cases = []
    values = {"nan": np.nan, "inf": np.inf, "minus_inf": -np.inf}
    tiny, bn = fx.tiny(), fx.tiny_bn_fc()
    spots = {"conv_weight": (tiny, "w", "conv"), "conv_bias": (tiny, "b", "conv"),
             "bn_scale": (bn, "bn", "conv"), "fc_weight": (bn, "fw", "gemm"), "fc_bias": (bn, "fb", "gemm")}
    for (spot, (model, prefix, layer)), (label, value) in itertools.product(spots.items(), values.items()):
        files = {"m.onnx": fx.model_bytes(fx.with_value(model, prefix, value, 1))}
        for command in (["inspect", "m.onnx"], ["plan", "m.onnx"],
                        ["infer", "m.onnx", "--input", X, "--output", "y.npy", "--calibration", CALIB]):
            cases.append(Case("non_finite", f"{spot}/{label}/{command[0]}", command, files, culprits=("layer", layer, "finite")))
    for (label, value), where in itertools.product(values.items(), ("first", "last")):
        array = fx.samples(3, 5)
        array.flat[0 if where == "first" else -1] = value
        files = {"bad.npy": fx.npy_bytes(array)}
        cases += [
            Case("non_finite", f"calibration/{label}/{where}/infer",
                 ["infer", MODEL, "--input", X, "--output", "y.npy", "--calibration", "bad.npy"], files, culprits=("--calibration", "bad.npy", "finite")),
            Case("non_finite", f"calibration/{label}/{where}/simulate", ["simulate", MODEL, "--calibration", "bad.npy"], files,
                 culprits=("--calibration", "bad.npy", "finite")),
            Case("non_finite", f"input/{label}/{where}/infer", ["infer", MODEL, "--input", "bad.npy", "--output", "y.npy",
                 "--calibration", CALIB], files, culprits=("--input", "bad.npy", "finite")),
            Case("non_finite", f"input/{label}/{where}/simulate", ["simulate", MODEL, "--input", "bad.npy", "--calibration", CALIB],
                 files, culprits=("--input", "bad.npy", "finite")),
        ]
    return cases


def _graph(nodes, inputs, outputs, inits=(), opset=17, name="g") -> bytes:
    model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, list(inits)),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def onnx_graphs() -> list[Case]:
    """Malformed and hostile graphs: every command that reads a model refuses them in one line."""
    tiny = fx.tiny()
    good = fx.model_bytes(tiny)
    x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"])
    w = onnx.numpy_helper.from_array(np.ones((4, 2, 3, 3), np.float32), "w")
    w0 = onnx.numpy_helper.from_array(np.ones((0, 2, 3, 3), np.float32), "w")
    bad = {
        "empty_file": (b"", ("m.onnx",)),
        "random_bytes": (bytes(np.random.default_rng(1).integers(0, 256, 4000, dtype=np.uint8)), ("m.onnx",)),
        "truncated": (good[: len(good) // 2], ("m.onnx",)),
        "text_file": (b"hello, I am not a model\n", ("m.onnx",)),
        "no_nodes": (_graph([], [x4], [y]), ("no nodes",)),
        "unsupported_op": (_graph([helper.make_node("Sin", ["x"], ["y"], name="sine")], [x4], [y]), ("sine", "Sin")),
        "dangling_input": (_graph([helper.make_node("Conv", ["x", "nowhere"], ["y"], name="lost")], [x4], [y]), ("lost",)),
        "cycle": (_graph([helper.make_node("Relu", ["b"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["b"], name="r2")],
                         [x4], [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 2, 6, 6])]), ("r",)),
        "zero_out_channels": (_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="c0", pads=[1, 1, 1, 1])], [x4], [y], [w0]),
                              ("c0",)),
        "two_inputs": (_graph([helper.make_node("Add", ["x", "x2"], ["y"], name="add")],
                              [x4, helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 2, 6, 6])], [y]), ("x2",)),
        "rank_2_input": (_graph([helper.make_node("Relu", ["x"], ["y"], name="r")],
                                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 72])], [y]), ("x",)),
        "huge_kernel": (_graph([helper.make_node("Conv", ["x", "wk"], ["y"], name="big", pads=[0, 0, 0, 0])], [x4], [y],
                               [onnx.numpy_helper.from_array(np.ones((4, 2, 7, 7), np.float32), "wk")]), ("big",)),
        "dilation": (_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="dil", dilations=[2, 2], pads=[2, 2, 2, 2])],
                            [x4], [y], [w]), ("dil", "dilation")),
        "conv3d_weights": (_graph([helper.make_node("Conv", ["x", "w5"], ["y"], name="c3")], [x4], [y],
                                  [onnx.numpy_helper.from_array(np.ones((4, 2, 1, 3, 3), np.float32), "w5")]), ("c3",)),
        "opset_future": (_with_opset(tiny, 99), ("m.onnx",)),
        "symbolic_dims": (_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="c", pads=[1, 1, 1, 1])],
                                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", "W"])], [y], [w]),
                          ("--input-shape",)),
        "output_is_input": (_graph([helper.make_node("Relu", ["x"], ["r"], name="r")], [x4],
                                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])]), ("x",)),
    }
    for dtype in fx.INT_TYPES:
        bad[f"input_{TensorProto.DataType.Name(dtype).lower()}"] = (fx.model_bytes(fx.retyped_input(tiny, dtype)),
                                                                     (TensorProto.DataType.Name(dtype), "FLOAT"))
    cases = []
    commands = {"inspect": ["inspect", "m.onnx"], "plan": ["plan", "m.onnx"],
                "infer": ["infer", "m.onnx", "--input", X, "--output", "y.npy", "--calibration", CALIB],
                "simulate": ["simulate", "m.onnx"], "generate": ["generate", "--model", "m.onnx", "-o", "rtl"]}
    for (label, (data, culprits)), (command, argv) in itertools.product(bad.items(), commands.items()):
        cases.append(Case("onnx_graphs", f"{label}/{command}", argv, {"m.onnx": data}, culprits=culprits))
    group2 = fx.model_bytes(_grouped(2))
    message = "groups=2"
    for command in ("plan", "simulate", "generate"):
        cases.append(Case("onnx_graphs", f"group2/{command}", commands[command], {"m.onnx": group2}, culprits=(message, "depthwise")))
    cases.append(Case("onnx_graphs", "group2/inspect_hw", ["inspect", "m.onnx", "--hw", "default"], {"m.onnx": group2}, "ok",
                      checks=[("stdout", message)]))
    cases.append(Case("onnx_graphs", "group2/infer_golden_vs_onnxruntime",
                      ["infer", "m.onnx", "--input", "x4.npy", "--output", "y.npy", "--calibration", "x4.npy"],
                      {"m.onnx": group2, "x4.npy": fx.npy_bytes(np.random.default_rng(3).random((2, 4, 6, 6)).astype(np.float32))},
                      "ok", checks=[("files", "y.npy"), ("near_onnxruntime", "m.onnx", "x4.npy", "y.npy")]))
    return cases


def _with_opset(model: onnx.ModelProto, version: int) -> bytes:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.opset_import[0].version = version
    return copy.SerializeToString()


def _grouped(groups: int) -> onnx.ModelProto:
    b = fx.GraphBuilder((1, 4, 6, 6))
    return b.model(b.conv("input", 4, 4, k=3, groups=groups))


# ----------------------------------------------------------------------------- files and paths
def arrays() -> list[Case]:
    npz = __import__("io").BytesIO()
    np.savez(npz, a=fx.samples(2))
    bad = {
        "npz": (npz.getvalue(), (".npz",)),
        "zero_size_file": (b"", ("cannot read",)),
        "garbage": (b"\x93NUMPY garbage", ("cannot read",)),
        "empty_batch": (fx.npy_bytes(np.zeros((0, 2, 6, 6), np.float32)), ("(0, 2, 6, 6)", "N >= 1")),
        "empty_1d": (fx.npy_bytes(np.zeros((0,), np.float32)), ("(0,)", "N >= 1")),
        "wrong_channels": (fx.npy_bytes(np.zeros((2, 3, 6, 6), np.float32)), ("(2, 3, 6, 6)", "allowed")),
        "wrong_rank": (fx.npy_bytes(np.zeros((3, 6, 6), np.float32)), ("(3, 6, 6)", "allowed")),
        "flat_wrong": (fx.npy_bytes(np.zeros((2, 71), np.float32)), ("(2, 71)", "allowed")),
        "scalar": (fx.npy_bytes(np.float32(1)), ("()", "allowed")),
        "rank5": (fx.npy_bytes(np.zeros((1, 1, 2, 6, 6), np.float32)), ("(1, 1, 2, 6, 6)",)),
        "strings": (fx.npy_bytes(np.array(["a", "b"])), ("dtype",)),
        "complex": (fx.npy_bytes(np.zeros((1, 2, 6, 6), np.complex64)), ("complex",)),
        "object_pickle": (None, ("cannot read",)),
    }
    obj = __import__("io").BytesIO()
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    bad["object_pickle"] = (obj.getvalue(), ("cannot read",))
    cases = []
    for label, (data, culprits) in bad.items():
        files = {"a.npy": data}
        cases += [
            Case("arrays", f"{label}/infer_input", ["infer", MODEL, "--input", "a.npy", "--output", "y.npy", "--calibration", CALIB],
                 files, culprits=("--input", "a.npy", *culprits)),
            Case("arrays", f"{label}/infer_calibration", ["infer", MODEL, "--input", X, "--output", "y.npy", "--calibration", "a.npy"],
                 files, culprits=("--calibration", "a.npy", *culprits)),
            Case("arrays", f"{label}/simulate_input", ["simulate", MODEL, "--input", "a.npy", "--calibration", CALIB], files,
                 culprits=("--input", "a.npy", *culprits)),
            Case("arrays", f"{label}/generate_calibration", ["generate", "--model", MODEL, "--calibration", "a.npy", "-o", "rtl"],
                 files, culprits=("--calibration", "a.npy", *culprits)),
        ]
    for label, argv, culprits in (
        ("missing_input", ["infer", MODEL, "--input", "nope.npy", "--output", "y.npy", "--calibration", CALIB], ("nope.npy",)),
        ("input_is_folder", ["infer", MODEL, "--input", "d", "--output", "y.npy", "--calibration", CALIB], ("--input", "d")),
        ("calibration_empty_folder", ["infer", MODEL, "--input", X, "--output", "y.npy", "--calibration", "d"], ("--calibration", "d")),
        ("int16_input", ["infer", MODEL, "--input", "i.npy", "--output", "y.npy", "--calibration", CALIB], ("int16",)),
    ):
        cases.append(Case("arrays", label, argv, {"i.npy": fx.npy_bytes(np.zeros((1, 2, 6, 6), np.int16))}, culprits=culprits,
                          folders=("d",)))
    return cases


def yaml_files() -> list[Case]:
    bad = {
        "latin1": ("name: caf\xe9\n".encode("latin-1"), ("UTF-8",)),
        "utf16": ("name: x\n".encode("utf-16"), ("UTF-8",)),
        "binary": (bytes(range(256)), ()),
        "duplicate_top_key": (b"name: a\nname: b\n", ("duplicate", "name")),
        "duplicate_nested_key": (b"pe: {rows: 4, rows: 8}\n", ("duplicate", "rows")),
        "duplicate_section": (b"pe: {rows: 4}\npe: {rows: 8}\n", ("duplicate", "pe")),
        "not_yaml": (b"pe: [unclosed\n", ("not valid YAML",)),
        "tabs": (b"pe:\n\trows: 4\n", ("not valid YAML",)),
        "empty": (b"", ()),
        "just_a_list": (b"- 1\n- 2\n", ("mapping",)),
        "just_a_number": (b"42\n", ("mapping",)),
        "yaml_bomb": (b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                      b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n", ("a",)),
        "python_tag": (b"name: !!python/object/apply:os.system ['true']\n", ("not valid YAML",)),
    }
    cases = []
    for label, (data, culprits) in bad.items():
        files = {"f.yaml": data}
        for command, argv in (("plan", ["plan", MODEL, "--hw", "f.yaml"]), ("simulate", ["simulate", MODEL, "--hw", "f.yaml"]),
                              ("generate", ["generate", "--model", MODEL, "--hw", "f.yaml", "-o", "rtl"]),
                              ("sweep_space", ["sweep", MODEL, "--space", "f.yaml", "-o", "sw"]),
                              ("sweep_hw", ["sweep", MODEL, "--hw", "f.yaml", "-o", "sw"])):
            cases.append(Case("yaml_files", f"{label}/{command}", argv, files, culprits=("f.yaml", *culprits)))
    for label, argv in (("hw_folder", ["plan", MODEL, "--hw", "d"]), ("hw_missing", ["plan", MODEL, "--hw", "missing.yaml"]),
                        ("space_folder", ["sweep", MODEL, "--space", "d", "-o", "sw"]),
                        ("space_missing", ["sweep", MODEL, "--space", "missing.yaml", "-o", "sw"])):
        culprit = "missing.yaml" if "missing.yaml" in argv else "d"
        cases.append(Case("yaml_files", label, argv, culprits=(culprit,), folders=("d",)))
    return cases


def output_paths() -> list[Case]:
    cases = []
    files = {"file": b"I am a file\n"}
    targets = {"folder": ("d", ("d", "folder")), "under_file": ("file/out", ("file",)),
               "deep_under_file": ("file/a/b/out", ("file",))}
    for label, (target, culprits) in targets.items():
        for command, argv in (
            ("infer", ["infer", MODEL, "--input", X, "--output", f"{target}.npy" if label != "folder" else target, "--calibration", CALIB]),
            ("plan", ["plan", MODEL, "-o", f"{target}.json" if label != "folder" else target]),
            ("simulate_vcd", ["simulate", MODEL, "--engine", "amaranth", "--vcd", f"{target}.vcd" if label != "folder" else target]),
        ):
            cases.append(Case("output_paths", f"{label}/{command}", argv, files, culprits=culprits, folders=("d",)))
    for command, argv in (("generate", ["generate", "--model", MODEL, "-o", "file"]), ("sweep", ["sweep", MODEL, "-o", "file"]),
                          ("generate_under", ["generate", "--model", MODEL, "-o", "file/rtl"]),
                          ("sweep_under", ["sweep", MODEL, "-o", "file/sw"])):
        cases.append(Case("output_paths", command, argv, files, culprits=("file",)))
    return cases


def vcd() -> list[Case]:
    cases = [Case("vcd", "isa_engine", ["simulate", MODEL, "--engine", "isa", "--vcd", "w.vcd"], culprits=("--vcd", "isa")),
             Case("vcd", "isa_default_engine", ["simulate", MODEL, "--vcd", "w.vcd"], culprits=("--vcd", "isa")),
             Case("vcd", "isa_missing_folder", ["simulate", MODEL, "--vcd", "no/such/w.vcd"], culprits=("--vcd", "isa"))]
    cases.append(Case("vcd", "amaranth_missing_folder", ["simulate", "--layer", "conv3", MODEL, "--engine", "amaranth", "--vcd",
                      "new/w.vcd", "--json"], expect="ok", checks=[("json", "bit_exact", True), ("vcd", "new/w.vcd")]))
    return cases


# ----------------------------------------------------------------------------- configurations
BASE = {"name": "t", "clock_mhz": 50, "pe": {"rows": 2, "cols": 2, "simd": 2}, "widths": {"activation": 8, "weight": 8, "accumulator": 32},
        "buffers": {"input_bytes": 4096, "weight_bytes": 4096, "output_bytes": 4096},
        "dram": {"bus_width_bits": 16, "bandwidth_bytes_per_cycle": 2, "latency_cycles": 4, "burst_beats": 8}}
NUMBER_BAD = ["abc", ".nan", ".inf", "-.inf", "-1", "1e30", "[1]", "{a: 1}", "true", "null", "0x"]
CHOICE_BAD = ["bogus", "7", "[all]", "{a: 1}", "null", ".nan"]
LIST_BAD = ["bogus", "[bogus]", "[input, input]", "7", "{a: 1}"]


def _yaml(config: dict, path: str, raw: str) -> bytes:
    """`config` as YAML with the field `path` (dotted) set to the YAML text `raw`."""
    import yaml

    lines = []
    section, _, name = path.rpartition(".")
    data = json.loads(json.dumps(config))
    if section and section in data:
        data[section].pop(name, None)
        if not data[section]:
            del data[section]
    elif not section:
        data.pop(name, None)
    text = yaml.safe_dump(data, sort_keys=False)
    for line in text.splitlines():
        lines.append(line)
        if section and line == f"{section}:":
            lines.append(f"  {name}: {raw}")
    if section and f"{section}:" not in text.splitlines():
        lines += [f"{section}:", f"  {name}: {raw}"]
    if not section:
        lines.append(f"{name}: {raw}")
    return ("\n".join(lines) + "\n").encode()


def config_fields() -> list[Case]:
    """Every field with values outside what `docs/config.md` allows: one error naming it."""
    from hwgen.config import config_fields as fields

    cases = []
    for spec in fields():
        text = spec.kind.describe()
        if spec.path in ("name", "device", "board"):
            bad = ["[1]", "{a: 1}"]
        elif text.startswith("one of"):
            bad = CHOICE_BAD
        elif text.startswith("a list"):
            bad = LIST_BAD
        elif text in ("8", "32"):
            bad = ["16", "4", "64", "abc"]
        else:
            bad = NUMBER_BAD
        for raw in bad:
            files = {"c.yaml": _yaml(BASE, spec.path, raw)}
            cases.append(Case("config_fields", f"{spec.path}={raw}", ["plan", MODEL, "--hw", "c.yaml"], files,
                              culprits=("c.yaml", spec.path.split(".")[-1])))
    for label, text, culprits in (
        ("unknown_top", "nonsense: 1\n", ("nonsense",)), ("unknown_nested", "pe: {rows: 2, cols: 2, simd: 2, depth: 3}\n", ("depth",)),
        ("section_scalar", "pe: 4\n", ("pe",)), ("section_list", "buffers: [1, 2]\n", ("buffers",)),
        ("param_bank_below_rows", "pe: {rows: 32, cols: 1, simd: 1}\ntemplate: {param_bank_channels: 16}\n"
         "dram: {bus_width_bits: 8, bandwidth_bytes_per_cycle: 1, latency_cycles: 4, burst_beats: 8}\n", ("param_bank_channels", "pe.rows")),
        ("input_bytes_odd", "buffers: {input_bytes: 1001, weight_bytes: 4096, output_bytes: 4096}\n", ("input_bytes", "1001")),
        ("simd_over_rows", "pe: {rows: 2, cols: 2, simd: 4}\n", ("simd",)),
    ):
        data = dict(BASE)
        for key, value in __import__("yaml").safe_load(text).items():
            data[key] = value
        import yaml

        cases.append(Case("config_fields", label, ["plan", MODEL, "--hw", "c.yaml"], {"c.yaml": yaml.safe_dump(data).encode()},
                          culprits=("c.yaml", *culprits)))
    return cases


def config_generates() -> list[Case]:
    """Configurations at the edges of the documented ranges: they load, so they generate."""
    import yaml

    edges = [
        {"pe": {"rows": 1, "cols": 1, "simd": 1}, "template": {"param_bank_channels": 16, "queue_depth": 1},
         "dram": {"bus_width_bits": 8, "bandwidth_bytes_per_cycle": 0.015625, "latency_cycles": 0, "burst_beats": 1}},
        {"pe": {"rows": 1, "cols": 1, "simd": 1}, "template": {"semaphore_bits": 2, "dram_address_bits": 16, "partial_sums": "none"},
         "dram": {"bus_width_bits": 8, "bandwidth_bytes_per_cycle": 1, "latency_cycles": 4, "burst_beats": 8}},
    ]
    cases = []
    for k, edge in enumerate(edges):
        data = json.loads(json.dumps(BASE))
        for key, value in edge.items():
            data.setdefault(key, {}).update(value)
        cases.append(Case("config_generates", f"edge{k}", ["generate", "--model", MODEL, "--hw", "c.yaml", "-o", "rtl"],
                          {"c.yaml": yaml.safe_dump(data).encode()}, "ok", checks=[("files", "rtl")]))
    return cases


def no_legal_tile() -> list[Case]:
    import yaml

    cases = []
    for label, change in (("tiny_input", {"buffers": {"input_bytes": 64}}), ("tiny_weight", {"buffers": {"weight_bytes": 64}}),
                          ("tiny_output", {"buffers": {"output_bytes": 64}}), ("all_tiny", {"buffers": {"input_bytes": 64, "weight_bytes": 64, "output_bytes": 64}}),
                          ("no_partial_sums", {"buffers": {"weight_bytes": 128}, "template": {"partial_sums": "none"}})):
        data = json.loads(json.dumps(BASE))
        for key, value in change.items():
            data.setdefault(key, {}).update(value)
        for command in (["plan", MODEL, "--hw", "c.yaml"], ["simulate", MODEL, "--hw", "c.yaml"], ["inspect", MODEL, "--hw", "c.yaml"]):
            expect = "ok" if command[0] == "inspect" else "error"
            cases.append(Case("no_legal_tile", f"{label}/{command[0]}", command, {"c.yaml": yaml.safe_dump(data).encode()}, expect,
                              culprits=("no legal tile; ",), checks=[("reasoned", "no legal tile; ")]))
    return cases


# ----------------------------------------------------------------------------- sweeps
SPACE_BAD = {
    "nan_min": ("pe: {rows: {min: .nan, max: 8, step: 1}}", ("pe.rows", "finite")),
    "nan_max": ("pe: {rows: {min: 1, max: .nan, step: 1}}", ("pe.rows", "finite")),
    "inf_max_factor": ("pe: {rows: {min: 1, max: .inf, factor: 2}}", ("pe.rows", "finite")),
    "inf_max_step": ("buffers: {input_bytes: {min: 64, max: .inf, step: 64}}", ("input_bytes", "finite")),
    "minus_inf_min": ("pe: {rows: {min: -.inf, max: 4, step: 1}}", ("pe.rows", "finite")),
    "nan_step": ("pe: {rows: {min: 1, max: 4, step: .nan}}", ("pe.rows", "finite")),
    "inf_step": ("pe: {rows: {min: 1, max: 4, step: .inf}}", ("pe.rows", "finite")),
    "nan_factor": ("pe: {rows: {min: 1, max: 4, factor: .nan}}", ("pe.rows", "finite")),
    "factor_one": ("pe: {rows: {min: 1, max: 4, factor: 1}}", ("pe.rows", "factor")),
    "factor_tiny_margin": ("pe: {rows: {min: 1, max: 256, factor: 1.0000000001}}", ("pe.rows", "factor")),
    "factor_below_one": ("pe: {rows: {min: 1, max: 4, factor: 0.5}}", ("pe.rows", "factor")),
    "factor_negative": ("pe: {rows: {min: 1, max: 4, factor: -2}}", ("pe.rows", "factor")),
    "factor_zero_min": ("pe: {rows: {min: 0, max: 4, factor: 2}}", ("pe.rows", "min")),
    "step_zero": ("pe: {rows: {min: 1, max: 4, step: 0}}", ("pe.rows", "step")),
    "step_negative": ("pe: {rows: {min: 1, max: 4, step: -1}}", ("pe.rows", "step")),
    "step_tiny": ("dram: {bandwidth_bytes_per_cycle: {min: 1, max: 2, step: 1.0e-12}}", ("1000000",)),
    "huge_step_range": ("buffers: {input_bytes: {min: 64, max: 1073741824, step: 1}}", ("1000000",)),
    "huge_product": ("pe: {rows: {min: 1, max: 256, step: 1}, cols: {min: 1, max: 256, step: 1}}\nbuffers: {input_bytes: {min: 64, max: 4096, step: 64}}",
                     ("1000000",)),
    "huge_float_range": ("dram: {bandwidth_bytes_per_cycle: {min: 1, max: 1.0e+300, step: 1}}", ("1000000",)),
    "min_over_max": ("pe: {rows: {min: 8, max: 2, step: 1}}", ("pe.rows", "exceeds")),
    "missing_max": ("pe: {rows: {min: 1, step: 1}}", ("pe.rows",)),
    "both_step_factor": ("pe: {rows: {min: 1, max: 4, step: 1, factor: 2}}", ("pe.rows",)),
    "unknown_range_key": ("pe: {rows: {min: 1, max: 4, stride: 1}}", ("pe.rows", "stride")),
    "string_bounds": ("pe: {rows: {min: a, max: b, step: 1}}", ("pe.rows",)),
    "bool_bounds": ("pe: {rows: {min: true, max: 4, step: 1}}", ("pe.rows",)),
    "empty_list": ("pe: {rows: []}", ("pe.rows",)),
    "repeated_values": ("pe: {rows: [2, 2]}", ("pe.rows", "repeat")),
    "bad_value": ("pe: {rows: [2, -4]}", ("pe.rows",)),
    "nan_value": ("dram: {bandwidth_bytes_per_cycle: [1, .nan]}", ("bandwidth_bytes_per_cycle",)),
    "inf_value": ("clock_mhz: [50, .inf]", ("clock_mhz",)),
    "unknown_section": ("nonsense: {rows: [2]}", ("nonsense",)),
    "unknown_field": ("pe: {depth: [2]}", ("pe.depth",)),
    "widths_not_sweepable": ("widths: {activation: [8]}", ("widths",)),
    "section_list": ("pe: [1, 2]", ("pe",)),
    "base_number": ("base: 7\npe: {rows: [2]}", ("base",)),
    "base_missing": ("base: nosuch.yaml\npe: {rows: [2]}", ("base", "nosuch.yaml")),
    "top_list": ("[1, 2]", ("mapping",)),
    "merged_banks_flat": ("template: {merged_banks: [input]}", ("merged_banks",)),
    "template_bogus": ("template: {queue_fields: [bogus]}", ("queue_fields", "bogus")),
}


def sweep_space() -> list[Case]:
    cases = []
    for label, (text, culprits) in SPACE_BAD.items():
        cases.append(Case("sweep_space", label, ["sweep", MODEL, "--space", "s.yaml", "-o", "sw"], {"s.yaml": text.encode() + b"\n"},
                          culprits=("s.yaml", *culprits)))
        cases.append(Case("sweep_space", f"{label}/with_hw", ["sweep", MODEL, "--space", "s.yaml", "--hw", "icebreaker", "-o", "sw"],
                          {"s.yaml": text.replace("base: nosuch.yaml\n", "").encode() + b"\n"},
                          culprits=("s.yaml",) if "base" not in label else ()))
    return [case for case in cases if not (case.name.endswith("with_hw") and "base" in case.name)]


SWEEP_SPACE = "pe: {rows: [1, 2, 4, 8]}\n"
"""The space of the cache cases: four points of the tiny model."""


def sweep_cache(reference: dict[str, bytes]) -> list[Case]:
    """`reference`: the `points/` records of a clean sweep of `SWEEP_SPACE` by file name."""
    cases = []
    names = sorted(reference)
    corruptions = {
        "empty_list": lambda data: b"[]", "empty_object": lambda data: b"{}", "null": lambda data: b"null",
        "number": lambda data: b"42", "string": lambda data: b'"ok"', "truncated": lambda data: data[: len(data) // 2],
        "empty_file": lambda data: b"", "binary": lambda data: bytes(range(256)),
        "no_status": lambda data: _edit(data, lambda r: r.pop("status", None)),
        "bad_status": lambda data: _edit(data, lambda r: r.update(status="great")),
        "status_list": lambda data: _edit(data, lambda r: r.update(status=["ok"])),
        "tampered_cycles": lambda data: _edit(data, lambda r: r.update(cycles=1)),
        "tampered_status": lambda data: _edit(data, lambda r: r.update(status="failed", reason="x")),
        "nested_value": lambda data: _edit(data, lambda r: r.update(cycles={"a": 1})),
        "no_checksum": lambda data: _edit(data, lambda r: r.pop("checksum", None)),
        "other_key": lambda data: _edit(data, lambda r: r.update(key="0" * 24)),
        "index_text": lambda data: _edit(data, lambda r: r.update(index="3")),
    }
    # every record of a case is corrupted differently: one rerun (one worker pool) checks several
    kinds = list(corruptions.items())
    for start in range(0, len(kinds), len(names)):
        chunk = kinds[start:start + len(names)]
        files = {f"sw/points/{name}": corrupt(reference[name]) for name, (_, corrupt) in zip(names, chunk)}
        files = {**{f"sw/points/{n}": data for n, data in reference.items()}, **files, "s.yaml": SWEEP_SPACE.encode()}
        label = "+".join(kind for kind, _ in chunk)
        cases.append(Case("sweep_cache", label, ["sweep", MODEL, "--space", "s.yaml", "-o", "sw"], files, "ok",
                          checks=[*(("stderr", name) for name in names[:len(chunk)]), ("sweep_like", "sw")]))
    files = {**{f"sw/points/{n}": data for n, data in reference.items() if n != names[0]}, "s.yaml": SWEEP_SPACE.encode()}
    cases.append(Case("sweep_cache", "folder_in_place", ["sweep", MODEL, "--space", "s.yaml", "-o", "sw"], files, "ok",
                      checks=[("stderr", names[0]), ("sweep_like", "sw")], folders=(f"sw/points/{names[0]}",)))
    return cases


def _edit(data: bytes, change) -> bytes:
    record = json.loads(data)
    change(record)
    return json.dumps(record).encode()


# ----------------------------------------------------------------------------- the host link
def runtime_misuse() -> list[Case]:
    calls = [("read", [-1, 4]), ("read", [0, -4]), ("read", [0, 0]), ("read", [2**32, 4]), ("read", [2**40, 1]),
             ("read", ["0", 4]), ("read", [0.5, 4]), ("read", [0, 2**33]), ("read", [None, 1]),
             ("write", [-1, "AAAA"]), ("write", [2**32, "AAAA"]), ("write", [0, 1234]), ("write", [0, "str:text"]),
             ("write", [2**31, "AAAA"]), ("write", [0.0, "AAAA"]),
             ("checksum", [0, 0]), ("checksum", [1, 64]), ("checksum", [0, 63]), ("checksum", [-64, 64]),
             ("checksum", [2**32, 64]), ("checksum", [0, 2**40]),
             ("write_program", [1, "AAAA"]), ("write_program", [0, "AAA"]), ("write_program", [-2, "AAAA"]),
             ("write_program", [2**32, "AAAA"]), ("write_program", [0, 5])]
    return [Case("runtime_misuse", f"{method}{tuple(args)}", ["runtime_call", method, *args], kind="python",
                 culprits=(method.upper().replace("WRITE_PROGRAM", "PROGRAM"),)) for method, args in calls]


def link_frames() -> list[Case]:
    """Replies corrupted on the wire (every single byte error and bursts) never pass as data."""
    cases = []
    for command in ("IDENTIFY", "STATUS", "READ", "CHECKSUM", "COUNTERS"):
        for seed in range(8):
            cases.append(Case("link_frames", f"reply/{command}/{seed}", ["corrupt_reply", command, seed], kind="python",
                              culprits=(command,)))
        cases.append(Case("link_frames", f"request/{command}", ["request_frames", command], kind="python", expect="ok"))
    return cases


def all_cases(sweep_reference: dict[str, bytes]) -> list[Case]:
    cases = (duplicate_names() + non_finite() + onnx_graphs() + arrays() + yaml_files() + output_paths() + vcd()
             + config_fields() + config_generates() + no_legal_tile() + sweep_space() + sweep_cache(sweep_reference)
             + runtime_misuse() + link_frames())
    ids = [case.id for case in cases]
    assert len(set(ids)) == len(ids), "case ids must be unique"
    return cases
