"""studio.vendor: pinned htmx, Monaco and uPlot copied from node_modules into versioned static folders."""

import json

import pytest

from studio.vendor import ROOT, VendorError, pinned_version, static_path, vendor


def test_vendor_copies_htmx_monaco_and_uplot(tmp_path):
    created = vendor(static_dir=tmp_path)
    assert [p.name for p in created] == ["htmx-2.0.11", "monaco-0.57.0", "uplot-1.6.32"]
    htmx = tmp_path / static_path("htmx.org")
    assert htmx.read_bytes() == (ROOT / "node_modules/htmx.org/dist/htmx.min.js").read_bytes()
    assert (tmp_path / static_path("monaco-editor") / "loader.js").is_file()
    uplot_js, uplot_css = tmp_path / static_path("uplot"), tmp_path / static_path("uplot", "uPlot.min.css")
    assert uplot_js.read_bytes() == (ROOT / "node_modules/uplot/dist/uPlot.iife.min.js").read_bytes()
    assert b"var uPlot" in uplot_js.read_bytes() and b".uplot" in uplot_css.read_bytes()
    assert sorted(p.name for p in uplot_js.parent.iterdir()) == ["uPlot.iife.min.js", "uPlot.min.css"]
    assert not list((tmp_path / "vendor").glob("*.partial"))
    assert vendor(static_dir=tmp_path) == []


def test_every_vendored_package_is_pinned_exactly_in_package_json_and_its_lock():
    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    for package in ("htmx.org", "monaco-editor", "uplot"):
        version = pinned_version(package)
        assert version.replace(".", "").isdigit(), f"{package} {version} is a range, not a pin"
        assert lock[f"node_modules/{package}"]["version"] == version


def test_static_path_names_a_served_file_or_says_which_exist():
    assert static_path("uplot") == "vendor/uplot-1.6.32/uPlot.iife.min.js"
    with pytest.raises(VendorError, match="uPlot.iife.min.js, uPlot.min.css"):
        static_path("uplot", "uPlot.esm.js")


def test_vendor_tells_to_run_npm_ci_without_node_modules(tmp_path):
    with pytest.raises(VendorError, match="npm ci"):
        vendor(static_dir=tmp_path, node_modules=tmp_path / "node_modules")
