"""The project's dependency pins agree with what its images run: the vllm extra with the vLLM image, the torch
floor with the worker image's torch."""

import re
import tomllib

from packaging.requirements import Requirement

from .conftest import DOCKER, ROOT


def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_vllm_extra_pins_the_version_of_the_vllm_image_compose_and_the_example_env_name():
    (pin,) = [Requirement(r) for r in project()["optional-dependencies"]["vllm"]]
    version = str(pin.specifier).removeprefix("==")
    assert pin.name == "vllm" and str(pin.specifier).startswith("==")
    assert f"vllm/vllm-openai:v{version}" in (DOCKER / "compose.yml").read_text()
    assert f"VLLM_IMAGE=vllm/vllm-openai:v{version}" in (DOCKER / "env.example").read_text()


def test_the_worker_images_torch_satisfies_the_projects_torch_floor():
    (torch,) = [Requirement(r) for r in project()["dependencies"] if Requirement(r).name == "torch"]
    image = re.search(r"ARG TORCH_SPEC=torch==([\d.]+)", (DOCKER / "worker.Dockerfile").read_text()).group(1)
    floor = re.search(r">=([\d.]+)", str(torch.specifier)).group(1)
    assert torch.specifier.contains(image) and image.split(".")[:2] == floor.split(".")[:2]
