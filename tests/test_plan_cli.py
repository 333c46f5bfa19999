"""`hwgen plan`: the JSON summary, -o, the table and errors."""
import json

import yaml

from cli.main import main
from planner.plan import load_plan
from hw_configs import data_config, data_config_path


def test_json_summary(capsys, tmp_path):
    out = tmp_path / "plan.yaml"
    assert main(["plan", "digits", "--hw", str(data_config_path("ice40up5k")), "--json", "-o", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"layers", "total", "planned", "reused"}
    assert set(doc["layers"][0]) == {"name", "tiles", "order", "dram_bytes", "cycles", "utilization", "energy_pj"}
    assert doc["total"]["cycles"] == sum(l["cycles"] for l in doc["layers"])
    assert doc["total"]["dram_bytes"] == sum(l["dram_bytes"] for l in doc["layers"])
    assert doc["planned"] + doc["reused"] == len(doc["layers"])
    assert load_plan(out).cycles == doc["total"]["cycles"]


def test_table_and_objective(capsys):
    assert main(["plan", "digits", "--objective", "traffic", "--strategy", "eplanner"]) == 0
    assert "total" in capsys.readouterr().out


def test_unplannable_layer_exits_with_a_message(capsys, tmp_path):
    data = data_config("ice40up5k").to_dict()
    data["buffers"] = {"input_bytes": 64, "weight_bytes": 64, "output_bytes": 64}
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(data))
    assert main(["plan", "resnet18", "--hw", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "hwgen plan: error: layer 'conv1' (3x224x224 -> 64x112x112, kernel 7x7" in err
    assert f"weight buffer needs >= {2 * (2 * 2 * 49)} B (has 64)" in err  # 2 rows x 2 lanes x 7x7, two banks
