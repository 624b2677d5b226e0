"""A target for Nsight Compute: run the reference or the solution forward a few times, nothing else.

`ncu ... python -m sandbox.workers.kernels reference|candidate PROBLEM SOLUTION DEVICE SEED`
"""

import sys

import torch

from sandbox.problem import import_file, make_inputs, make_model
from sandbox.workers.common import setup_device


def main(role, problem_path, solution_path, device, seed):
    setup_device(device)
    problem = import_file(problem_path, "ks_problem")
    if role == "reference":
        model = make_model(problem.Model, problem, seed, device)
    else:
        model = make_model(import_file(solution_path, "ks_solution").ModelNew, problem, seed, device)
    inputs = make_inputs(problem, seed, device)
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
