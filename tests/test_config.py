"""AcceleratorConfig loading and validation."""
import re
from dataclasses import replace
from unittest import mock

import pytest
import yaml

from hwgen.config import (CONFIG_DIR, DEFAULT_CONFIG, BankBuffer, DmaSharing, ProgramMemory, QueueFields, Template,
                          VectorOp, config_fields, config_from_dict, field_spec, load_config)
from common.errors import ConfigError
from hw_configs import data_config, data_config_path

SHIPPED = ("default", *sorted(path.stem for path in CONFIG_DIR.glob("*.yaml")))


def base() -> dict:
    return yaml.safe_load(data_config_path("ecp5-85f").read_text())


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_load(name):
    config = load_config(name)
    assert config.buffers.input_bank * 2 == config.buffers.input_bytes
    assert config_from_dict(config.to_dict()) == config


def test_default_is_the_ulx3s_85f_board_default():
    """`default` and a missing --hw are the ULX3S-85F board's configuration itself (no copy)."""
    assert load_config() == load_config("default") == load_config("ulx3s-85f")
    assert DEFAULT_CONFIG == CONFIG_DIR / "ulx3s-85f.yaml" and not (CONFIG_DIR / "default.yaml").exists()


def test_setup_b_buffers_match_table_8_2():
    b = load_config("setup_b").buffers
    assert (b.input_bytes, b.weight_bytes, b.output_bytes) == (512 * 1024, 256 * 1024, 512 * 1024)


def test_energy_defaults_follow_the_interstellar_table():
    config = data_config("ice40up5k")
    assert config.energy.dram_pj_per_byte == 200 / 2  # 200 pJ per 16-bit DRAM access
    assert config.energy.mac_pj == 0.075
    assert config.buffers.output_bank == 32 * 1024
    assert config.energy.output_buffer_pj_per_byte == pytest.approx(6 / 2)  # 32 KB SRAM: 6 pJ / 16 bit
    assert config.energy.input_buffer_pj_per_byte == pytest.approx(6 / 2 / 1.5)  # 16 KB: one halving


def test_energy_override():
    data = base()
    data["energy"] = {"dram_pj_per_byte": 7.5}
    config = config_from_dict(data)
    assert config.energy.dram_pj_per_byte == 7.5 and config.energy.mac_pj == 0.075


@pytest.mark.parametrize("section, key, value, needle", [
    ("pe", "rows", 0, "pe.rows: 0 is not allowed; expected an integer in [1, 256]"),
    ("pe", "simd", 3, "pe.simd: 3 is not allowed; expected a power of two in [1, 256]"),
    ("widths", "accumulator", 24, "widths.accumulator"),
    ("buffers", "input_bytes", "big", "buffers.input_bytes"),
    ("dram", "bandwidth_bytes_per_cycle", 4, "dram.bandwidth_bytes_per_cycle"),
    ("dram", "latency_cycles", -1, "dram.latency_cycles: -1 is not allowed; expected an integer in [0, 100000]"),
    ("energy", "mac_pj", -1.0, "energy.mac_pj"),
    ("template", "loops_and_registers", 1, "template.loops_and_registers: 1 is not allowed; expected one of: true, false"),
    ("template", "queue_fields", "some", "template.queue_fields: 'some' is not allowed; expected one of: all, used"),
    ("template", "program_memory", "ram", "template.program_memory: 'ram' is not allowed; expected one of: rom, spram"),
    ("template", "segment_fifos", True, "template.segment_fifos: True is not allowed; expected one of: memory, registers"),
    ("template", "param_bank_channels", 48, "template.param_bank_channels: 48 is not allowed; expected a power of two in [16, 1024]"),
    ("template", "dma", "one", "template.dma: 'one' is not allowed; expected one of: separate, shared"),
    ("template", "dram_address_bits", 33, "template.dram_address_bits: 33 is not allowed; expected an integer in [12, 32]"),
    ("template", "semaphore_bits", 0, "template.semaphore_bits: 0 is not allowed; expected an integer in [1, 8]"),
    ("template", "store_queue_depth", 65,
     "template.store_queue_depth: 65 is not allowed; expected an integer in [0, 64]"),
    ("template", "queue_kinds", "flags",
     "template.queue_kinds: 'flags' is not allowed; expected one of: decoded, registered"),
])
def test_bad_values_name_the_path_and_range(section, key, value, needle):
    data = base()
    data.setdefault(section, {})[key] = value
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        config_from_dict(data)


def test_missing_and_unknown_fields():
    data = base()
    del data["pe"]["cols"]
    with pytest.raises(ConfigError, match=r"pe\.cols: missing"):
        config_from_dict(data)
    data = base()
    data["dram"]["burst"] = 4
    with pytest.raises(ConfigError, match=r"dram\.burst: unknown field"):
        config_from_dict(data)


def test_yaml_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("pe: {rows: 1, cols: 1, simd: 1}\nclock_mhz: 0\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: clock_mhz"):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml")


def test_config_is_frozen():
    config = load_config()
    with pytest.raises(AttributeError):
        config.pe.rows = 3


def test_template_defaults_are_the_full_template_and_keep_old_configs_unchanged():
    """Configs without a `template:` section get the hardware they always had (registers and
    loops, whole-instruction queues, a program ROM, block-RAM segment queues, 1024-channel
    parameter banks) and their dictionaries (hence build ids and cache keys) are unchanged."""
    config = data_config("ice40up5k")
    t = config.template
    assert (t.loops_and_registers, t.queue_fields, t.program_memory, t.segment_fifos, t.param_bank_channels,
            t.dma, t.dram_address_bits) == (True, "all", "rom", "memory", 1024, "separate", 32)
    assert "template" not in config.to_dict()
    compact = load_config("icebreaker")
    assert compact.to_dict()["template"]["program_memory"] == "spram"
    assert (compact.template.dma, compact.template.dram_address_bits) == ("shared", 18)
    assert "constants_latency_cycles" not in config.to_dict()["dram"]  # a field added later, at its default
    data = base()
    data["template"] = {"queues": "used"}
    with pytest.raises(ConfigError, match=r"template\.queues: unknown field; allowed: loops_and_registers, queue_fields"):
        config_from_dict(data)


def test_merged_banks_exclude_spram_banks():
    data = base()
    data["buffers"]["spram"] = ["input"]
    data["template"] = {"merged_banks": ["weight", "input"]}
    with pytest.raises(ConfigError, match=r"template\.merged_banks: 'input' is also in buffers\.spram"):
        config_from_dict(data)
    data["template"] = {"merged_banks": ["tensor"]}
    with pytest.raises(ConfigError, match=r"template\.merged_banks: \['tensor'\] is not allowed; expected a list of "
                                          r"distinct names from: input, weight, param, acc"):
        config_from_dict(data)


def test_partial_sums_option_and_the_merged_accumulator_buffer():
    """`template.partial_sums` is `kept` (the default) or `none`; only without partial sums may the
    accumulator buffer's banks be merged (one side writes it, the other reads it)."""
    data = base()
    assert config_from_dict(data).template.partial_sums == "kept"
    data["template"] = {"partial_sums": "some"}
    with pytest.raises(ConfigError, match=r"template\.partial_sums: 'some' is not allowed; "
                                          r"expected one of: kept, none"):
        config_from_dict(data)
    data["template"] = {"merged_banks": ["acc"]}
    with pytest.raises(ConfigError, match=r"template\.merged_banks: 'acc' needs template\.partial_sums: none.*"
                                          r"allowed here: input, weight, param"):
        config_from_dict(data)
    data["template"] = {"merged_banks": ["acc"], "partial_sums": "none"}
    assert config_from_dict(data).template.merged_banks == ("acc",)


def test_vector_ops_default_to_all_four_reject_unknown_and_may_be_none():
    """The full template's vector unit has the four VEC operations of docs/isa.md; none listed
    is a template without a vector unit."""
    assert data_config("ice40up5k").template.vector_ops == ("max", "sum", "add", "copy")
    assert load_config("icebreaker").template.vector_ops == ()
    data = base()
    data["template"] = {"vector_ops": ["max", "min"]}
    with pytest.raises(ConfigError, match=r"template\.vector_ops: \['max', 'min'\] is not allowed; expected a list of "
                                          r"distinct names from: max, sum, add, copy"):
        config_from_dict(data)
    data["template"] = {"vector_ops": []}
    none = config_from_dict(data).template
    assert none.vector_ops == () and not none.vector_unit and data_config("ice40up5k").template.vector_unit


def test_dma_descriptor_reader_needs_the_shared_dma_and_the_spram_program_memory():
    """The full template's DMA keeps a copy of its descriptor; `reader` (the iCEBreaker's) only
    where one DMA reads the SPRAM descriptor reader's entry."""
    assert data_config("ice40up5k").template.dma_descriptor == "copy"
    assert load_config("icebreaker").template.dma_descriptor == "reader"
    for template, culprit in (({"dma": "shared"}, "dma: shared, program_memory: rom"),
                              ({"program_memory": "spram"}, "dma: separate, program_memory: spram")):
        data = base()
        data["template"] = {**template, "dma_descriptor": "reader"}
        with pytest.raises(ConfigError, match=r"template\.dma_descriptor: 'reader' needs template\.dma: shared and "
                                              rf"template\.program_memory: spram .*has {culprit}; allowed here: copy"):
            config_from_dict(data)
    data = base()
    data["template"] = {"dma_descriptor": "both"}
    with pytest.raises(ConfigError, match=r"template\.dma_descriptor: 'both' is not allowed; expected one of: copy, reader"):
        config_from_dict(data)


def test_dma_loops_below_four_need_the_shared_dma():
    assert (data_config("ice40up5k").template.dma_loops, load_config("icebreaker").template.dma_loops) == (4, 3)
    data = base()
    data["template"] = {"dma_loops": 2}
    with pytest.raises(ConfigError, match=r"template\.dma_loops: 2 needs template\.dma: shared \(the pointer walker\); "
                                          r"this config has dma: separate; allowed here: 4"):
        config_from_dict(data)
    data["template"] = {"dma": "shared", "dma_loops": 5}
    with pytest.raises(ConfigError, match=r"template\.dma_loops: 5 is not allowed; expected an integer in \[1, 4\]"):
        config_from_dict(data)
    data["template"] = {"dma": "shared", "dma_loops": 1}
    assert config_from_dict(data).template.dma_loops == 1


@pytest.mark.parametrize("change, needle", [
    ({"widths": {"activation": 16, "weight": 8, "accumulator": 32}}, "widths.activation: 16 is not allowed; expected 8"),
    ({"widths": {"activation": 8, "weight": 8, "accumulator": 16}}, "widths.accumulator: 16 is not allowed; expected 32"),
    ({"pe": {"rows": 3, "cols": 4, "simd": 2}}, "pe.rows: 3 must be a power of two"),
    ({"pe": {"rows": 8, "cols": 3, "simd": 2}}, "pe.cols: 3 must be a power of two"),
    ({"pe": {"rows": 2, "cols": 4, "simd": 4}}, "pe.simd: 4 must not exceed pe.rows (2)"),
    ({"buffers": {"input_bytes": 1001, "weight_bytes": 4096, "output_bytes": 4096}},
     "buffers.input_bytes: 1001 is not allowed; expected a multiple of 64 (4 * pe.cols * pe.simd"),
    ({"buffers": {"input_bytes": 4096, "weight_bytes": 4000, "output_bytes": 4096}},
     "buffers.weight_bytes: 4000 is not allowed; expected a multiple of 64 (2 * pe.rows * pe.simd"),
    ({"buffers": {"input_bytes": 4096, "weight_bytes": 4096, "output_bytes": 4040}},
     "buffers.output_bytes: 4040 is not allowed; expected a multiple of 64 (8 * pe.rows"),
    ({"dram": {"bus_width_bits": 256, "bandwidth_bytes_per_cycle": 2, "latency_cycles": 12, "burst_beats": 8}},
     "dram.bus_width_bits: 256 is wider than the input buffer word (128 bits); allowed here: a power of two in [8, 128]"),
    ({"pe": {"rows": 32, "cols": 4, "simd": 4}, "template": {"param_bank_channels": 16}},
     "template.param_bank_channels: 16 must be at least pe.rows (32); allowed here: a power of two in [32, 1024]"),
    ({"buffers": {"input_bytes": 1 << 20, "weight_bytes": 4096, "output_bytes": 4096},
      "template": {"address_steps": "compiler"}},
     "template.address_steps: 'compiler' needs input banks of at most 65536 pixels .* has 131072"),
    ({"buffers": {"input_bytes": 1 << 21, "weight_bytes": 4096, "output_bytes": 4096, "spram": ["input"]}},
     "buffers.spram: 'input' is not allowed here: an SPRAM bank holds at most 16384 words .* 32768 words of 128 bits; "
     "allowed here: weight"),
])
def test_what_generation_needs_is_refused_at_load(change, needle):
    """Every configuration that loads can be generated: what generation needs (the engines'
    int8 / int32 widths, power-of-two arrays with S <= R, banks of whole words, buffer words at
    least a bus wide, parameter banks of a tile's rows, CONVCFG step fields, SPRAM banks) is
    one ConfigError at load naming the field, the value and what is allowed."""
    data = {**base(), **change}
    with pytest.raises(ConfigError, match=".*".join(map(re.escape, needle.split(" .* ")))):
        config_from_dict(data)


def test_each_rule_refuses_something_the_fields_allow():
    """The rules are not vacuous: the shipped configs pass them all, and without them the
    configurations of the previous test load."""
    for name in SHIPPED:
        load_config(name)
    data = {**base(), "pe": {"rows": 2, "cols": 4, "simd": 4}}
    with pytest.raises(ConfigError, match=r"^pe\.simd: "):
        config_from_dict(data)
    with mock.patch("hwgen.config.model.RULES", []):
        assert config_from_dict(data).pe.simd == 4


def test_options_are_enumeration_members_and_strings_coerce():
    """A template built in code with strings holds the enumeration members (equal to the strings);
    an unknown string is a ConfigError naming the option."""
    template = Template(queue_fields="used", program_memory="spram", merged_banks=["input"], vector_ops=("max",))
    assert template.queue_fields is QueueFields.USED and template.program_memory is ProgramMemory.SPRAM
    assert template.merged_banks == (BankBuffer.INPUT,) and template.vector_ops == (VectorOp.MAX,)
    assert template == Template(queue_fields=QueueFields.USED, program_memory="spram", merged_banks=("input",),
                                vector_ops=["max"])
    assert str(QueueFields.USED) == f"{QueueFields.USED}" == "used"
    assert replace(template, dma="shared").dma is DmaSharing.SHARED
    with pytest.raises(ConfigError, match=r"template\.queue_fields: 'usd' is not allowed; expected one of: all, used"):
        Template(queue_fields="usd")
    config = load_config("icebreaker")
    assert yaml.safe_load(yaml.safe_dump(config.to_dict())) == config.to_dict()
    assert all(type(v) in (str, bool, int) for v in config.to_dict()["template"].values() if not isinstance(v, list))


def test_field_specs_are_public_and_check_one_value():
    """The sweep's API: every field with its path, kind, doc and default; one value checked alone."""
    specs = {spec.path: spec for spec in config_fields()}
    assert list(specs)[:6] == ["name", "device", "board", "clock_mhz", "instances", "pe.rows"]
    assert {spec.section for spec in specs.values()} == {"", "pe", "widths", "buffers", "dram", "energy", "template"}
    assert all(spec.doc and "\n" not in spec.doc for spec in specs.values())
    assert field_spec("template.dma").choices == (DmaSharing.SEPARATE, DmaSharing.SHARED)
    assert field_spec("template.merged_banks").is_list and field_spec("pe.simd").check(4) == 4
    assert field_spec("template.dma").check("shared") is DmaSharing.SHARED
    assert "at least `pe.rows`" in field_spec("template.param_bank_channels").allowed()
    with pytest.raises(ConfigError, match=r"pe\.simd: 3 is not allowed; expected a power of two in \[1, 256\]"):
        field_spec("pe.simd").check(3)
