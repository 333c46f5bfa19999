"""docs/config.md's field table is generated from the declarations (`python -m hwgen.config.docs`)."""
from hwgen.config import config_fields
from hwgen.config import docs


def test_the_field_table_is_the_generated_one():
    text = docs.DOC.read_text()
    assert text == docs.render(text), "docs/config.md is stale: run python -m hwgen.config.docs"
    for spec in config_fields():
        assert f"| `{spec.path}` | {spec.doc} | {spec.allowed()} | {docs.default_text(spec)} |" in text


def test_a_stale_table_is_refused_and_rewritten(tmp_path, monkeypatch, capsys):
    fresh, stale = docs.DOC.read_text(), tmp_path / "config.md"
    stale.write_text(fresh.replace("| `pe.rows` | PEs", "| `pe.rows` | processing elements"))
    monkeypatch.setattr(docs, "DOC", stale)
    assert docs.main(["--check"]) == 1 and "stale" in capsys.readouterr().err
    assert docs.main([]) == 0 and stale.read_text() == fresh
    assert docs.main(["--check"]) == 0
