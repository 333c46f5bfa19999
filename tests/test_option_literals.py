"""Code compares the string-valued options with their enumeration members (`hwgen.config.options`),
never with a string literal: a misspelt member is an AttributeError, a misspelt string is a
comparison that is silently false."""
from __future__ import annotations

import ast
from pathlib import Path

from hwgen.config import config_fields

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hwgen", "planner", "sim", "boards", "explore", "cli")
OPTIONS = frozenset(spec.name for spec in config_fields()
                    if spec.is_list or any(isinstance(choice, str) for choice in spec.choices or ()))
"""Options holding names: an attribute so named is taken for the option (`p.segment_fifos` of a
DMA's parameters, `t.dma` of a template)."""


def _literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(_literal(item) for item in node.elts)


def _mentions_option(node: ast.AST) -> bool:
    return any(isinstance(item, ast.Attribute) and item.attr in OPTIONS for item in ast.walk(node))


def literal_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, text) of each comparison in `source` between a string literal (or a tuple, list or
    set holding one) and an expression reading an option."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(map(_literal, operands)) and any(_mentions_option(o) for o in operands if not _literal(o)):
                found.append((node.lineno, ast.get_source_segment(source, node)))
    return found


def test_no_option_is_compared_with_a_string():
    sites = [f"{path.relative_to(ROOT)}:{line}: {text}"
             for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             for line, text in literal_comparisons(path.read_text())]
    assert not sites, ("compare with the enumeration members (hwgen.config.options), e.g. "
                       "`template.dma == DmaSharing.SHARED`:\n" + "\n".join(sites))


def test_the_check_finds_each_form():
    source = '''
if config.template.dma == "shared" or "acc" in t.merged_banks: pass
x = self.template.queue_fields != "used"
y = p.segment_fifos in ("registers",)
z = {"load": template.load_command}.get(queue) == "queue"
w = (template.dma, template.program_memory) != ("shared", "spram")
fine = template.dma == DmaSharing.SHARED and kind in config.buffers.spram and name == "queue"
'''
    assert sorted(line for line, _ in literal_comparisons(source)) == [2, 2, 3, 4, 5, 6]
    assert {"dma", "merged_banks", "vector_ops", "spram", "queue_kinds"} <= OPTIONS
    assert "queue_depth" not in OPTIONS and "loops_and_registers" not in OPTIONS
