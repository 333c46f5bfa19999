"""The command line answers without loading libraries it does not use, `plan` without any HDL (times:
bench/bench_cli.py, bench/plan_speed.py)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli.main import main

HEAVY = ("amaranth", "onnxruntime", "matplotlib", "dask", "distributed", "sklearn", "scipy", "cocotb")

PROBE = """
import json, sys
from cli.main import main
try:
    main({argv!r})
except SystemExit:
    pass
print(json.dumps(sorted({{name.split('.')[0] for name in sys.modules}} & set({heavy!r}))), file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["inspect", "digits"], ["inspect", "resnet18", "--json"],
                                  ["plan", "resnet18"]])
def test_light_commands_import_no_heavy_library(argv):
    result = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)], capture_output=True, text=True, check=True)
    assert json.loads(result.stderr.strip().splitlines()[-1]) == []


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("hwgen 0.")
