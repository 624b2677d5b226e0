"""studio.vendor: pinned htmx and Monaco copied from node_modules into versioned static folders."""

import pytest

from studio.vendor import ROOT, VendorError, static_path, vendor


def test_vendor_copies_htmx_and_monaco(tmp_path):
    created = vendor(static_dir=tmp_path)
    assert [p.name for p in created] == ["htmx-2.0.11", "monaco-0.57.0"]
    htmx = tmp_path / static_path("htmx.org")
    assert htmx.read_bytes() == (ROOT / "node_modules/htmx.org/dist/htmx.min.js").read_bytes()
    assert (tmp_path / static_path("monaco-editor") / "loader.js").is_file()
    assert not list((tmp_path / "vendor").glob("*.partial"))
    assert vendor(static_dir=tmp_path) == []


def test_vendor_tells_to_run_npm_ci_without_node_modules(tmp_path):
    with pytest.raises(VendorError, match="npm ci"):
        vendor(static_dir=tmp_path, node_modules=tmp_path / "node_modules")
