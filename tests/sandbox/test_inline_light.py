"""load_inline through the fast build with light headers (sandbox/native/light.py), in this process, g++ for real: the
unit compiled against the light header behaves as the one compiled against torch/extension.h (results, docstrings,
torch's error messages), the build records its stages and headers, and what the check cannot see stays full."""

import pytest
import torch

from sandbox import settings
from sandbox.native import inline

pytestmark = pytest.mark.slow

CPP = r"""
#include <vector>

torch::Tensor scale_light(torch::Tensor x, double alpha) {
    TORCH_CHECK(x.dim() == 1, "scale_light wants a 1-D tensor, not ", x.dim(), "-D");
    auto out = torch::empty_like(x);
    const float* a = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = a[i] * static_cast<float>(alpha);
    return out;
}

std::vector<int64_t> shapes_light(std::vector<torch::Tensor> xs) {
    std::vector<int64_t> out;
    for (const auto& x : xs) out.push_back(x.numel());
    return out;
}
"""
FUNCTIONS = {"scale_light": "Scales x by alpha.", "shapes_light": "Each tensor's numel."}


def build(name, cpp=CPP, enabled=True, monkeypatch=None):
    monkeypatch.setattr(settings, "INLINE_LIGHT_HEADERS", enabled)
    module = inline.load_inline(name=name, cpp_sources=cpp, functions=FUNCTIONS)
    return module, inline.BUILDS[-1]


def behaviour(module):
    """What a caller sees of MODULE: results, docstrings, the error TORCH_CHECK raises."""
    x = torch.arange(6, dtype=torch.float32)
    with pytest.raises(RuntimeError) as error:
        module.scale_light(x.view(2, 3), 1.0)
    return (
        module.scale_light(x, 2.5).tolist(),
        module.shapes_light([x, x[:2]]),
        module.scale_light.__doc__,
        module.shapes_light.__doc__,
        str(error.value),
    )


def test_the_light_unit_behaves_as_the_one_compiled_against_torch_extension_h(monkeypatch):
    light_module, light_build = build("ks_light_on", monkeypatch=monkeypatch)
    full_module, full_build = build("ks_light_off", enabled=False, monkeypatch=monkeypatch)
    assert light_build["headers"] == {"main.cpp": "bind"} and full_build["headers"] == {}
    assert {"binding", "check", "link"} <= set(light_build["stages"]) and "check" not in full_build["stages"]
    assert behaviour(light_module) == behaviour(full_module)
    assert "scale_light wants a 1-D tensor, not 2-D" in behaviour(light_module)[-1]


def test_a_unit_that_defines_a_template_is_compiled_against_torch_extension_h(monkeypatch):
    cpp = CPP + "\ntemplate <typename T> T twice_light(T v) { return v + v; }\n"
    module, built = build("ks_light_template", cpp, monkeypatch=monkeypatch)
    assert built["headers"]["main.cpp"].startswith("full: it defines templates")
    assert "check" not in built["stages"] and module.shapes_light([torch.ones(3)]) == [3]
