"""Copies the pinned front-end packages from node_modules into static/vendor: `python -m studio.vendor`."""

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_MODULES = ROOT / "node_modules"
STATIC_DIR = ROOT / "static"

# npm package -> (short name of its versioned folder, what to serve from it: files or folders, the first its main one)
PACKAGES = {
    "htmx.org": ("htmx", ("dist/htmx.min.js",)),
    "monaco-editor": ("monaco", ("min/vs",)),
    "uplot": ("uplot", ("dist/uPlot.iife.min.js", "dist/uPlot.min.css")),
}


class VendorError(Exception):
    pass


def pinned_version(package: str) -> str:
    return json.loads((ROOT / "package.json").read_text())["dependencies"][package]


def static_path(package: str, served: str = "") -> str:
    """Path under STATIC_URL of what the pinned version of a package serves (its main file or folder, or SERVED, a
    name among the others), e.g. vendor/htmx-2.0.11/htmx.min.js or vendor/uplot-1.6.32/uPlot.min.css."""
    name, sources = PACKAGES[package]
    names = [Path(source).name for source in sources]
    if served and served not in names:
        raise VendorError(f"{package} serves {', '.join(names)}, not {served}")
    return f"vendor/{name}-{pinned_version(package)}/{served or names[0]}"


def vendor(static_dir: Path = STATIC_DIR, node_modules: Path = NODE_MODULES) -> list[Path]:
    """Copy every package that is not there yet; returns the folders it created."""
    if not node_modules.is_dir():
        raise VendorError(f"{node_modules} is missing: run `npm ci` first")
    created = []
    for package, (name, sources) in PACKAGES.items():
        manifest = node_modules / package / "package.json"
        if not manifest.is_file():
            raise VendorError(f"{package} is not in {node_modules}: run `npm ci`")
        version, pinned = json.loads(manifest.read_text())["version"], pinned_version(package)
        if version != pinned:
            raise VendorError(f"{node_modules} holds {package} {version}, package.json pins {pinned}: run `npm ci`")
        target = static_dir / "vendor" / f"{name}-{version}"
        if target.exists():
            continue
        # Copy beside the target and rename, so an interrupted copy is never mistaken for a finished one.
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for source in sources:
            src = node_modules / package / source
            if src.is_dir():
                shutil.copytree(src, partial / src.name)
            else:
                shutil.copy2(src, partial)
        partial.rename(target)
        created.append(target)
    return created


if __name__ == "__main__":
    try:
        created = vendor()
    except VendorError as e:
        sys.exit(f"studio.vendor: {e}")
    for folder in created:
        print(f"vendored {folder.relative_to(ROOT)}")
    if not created:
        print("static/vendor is up to date")
