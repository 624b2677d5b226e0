"""The elementwise family: a model of elementwise operators only, planned as one fused kernel over every output
element (templates/elementwise.cu, .cpp)."""

import math

from agent.heuristic.emit import CPP_PRELUDE, PARALLEL_ELEMENTS, offset, op_function
from agent.heuristic.errors import Unsupported
from agent.heuristic.families.common import cuda_prelude, pointers
from agent.heuristic.families.fuse import Builder, Plan, finish, output_node
from agent.heuristic.families.template import render

HEADERS = ()  # the C++ kernel is self-contained


def plan_stage(analysis, nodes):
    """The model's operators NODES as one elementwise kernel, or Unsupported naming the first that is not one."""
    b = Builder(analysis)
    for node in nodes:
        if not b.elementwise(node):
            raise Unsupported(
                f"operator {node.get('target')} ({node['name']}) is not elementwise and not one the heuristic fuses"
            )
    out = output_node(analysis)
    if out not in b.values:
        b.value({"node": out})
    plan = Plan(
        "elementwise", b.nodes[out]["shape"], describe=f"one fused elementwise kernel over {len(nodes)} operator(s)"
    )
    return finish(b, plan, out)


def _vectorizable(plan):
    """Whether every operand is read at the output's own index or is one number: float4 loads then serve, where the
    element count (a multiple of 4) and the pointers' alignment allow, which the launch checks at run time."""
    return all(list(o.shape) == list(plan.out_shape) or math.prod(o.shape) == 1 for o in plan.operands)


def cuda(plan, block):
    names = [o.name for o in plan.operands]
    full = [list(o.shape) == list(plan.out_shape) for o in plan.operands]
    args = "".join(f"{n}, " for n in names)
    src = cuda_prelude(block) + op_function(
        "fused_op", [f"LOAD_{n}" for n in names], plan.body, qualifier="__device__ __forceinline__ "
    )
    loads = ", ".join(f"{o.name}[{offset(o.shape, plan.out_shape)}]" for o in plan.operands)
    src += render("elementwise.cu", "kernel", pointers=pointers(names), loads=loads)
    launch_vec4 = ""
    if _vectorizable(plan):
        vec_loads = "\n".join(
            f"        const float4 a_{n} = reinterpret_cast<const float4*>({n})[i];"
            if whole
            else f"        const float s_{n} = {n}[0];"
            for n, whole in zip(names, full)
        )
        lanes = {
            f"lane_{c}": ", ".join(f"a_{n}.{c}" if whole else f"s_{n}" for n, whole in zip(names, full)) for c in "xyzw"
        }
        src += render("elementwise.cu", "kernel_vec4", pointers=pointers(names), vec_loads=vec_loads, **lanes)
        aligned = [f"((uintptr_t){n} % 16 == 0)" for n, whole in zip(names, full) if whole]
        aligned += ["((uintptr_t)out % 16 == 0)", "(n % 4 == 0)"]
        launch_vec4 = render("elementwise.cu", "launch_vec4", aligned=" && ".join(aligned), args=args)
    return src + render("elementwise.cu", "launch", pointers=pointers(names), launch_vec4=launch_vec4, args=args)


def _inner_extent(plan):
    """The longest run of trailing output dims along which every operand is either contiguous and full, or
    constant: the inner loop over it vectorizes, with broadcast operands read once per outer step."""
    out = list(plan.out_shape)
    shapes = [[1] * (len(out) - len(o.shape)) + list(o.shape) for o in plan.operands]
    inner, kinds = 1, ["full" if list(sh) == out else "const" for sh in shapes]
    for d in range(len(out) - 1, -1, -1):
        ok = True
        for k, sh in enumerate(shapes):
            full = sh[d:] == out[d:]
            const = all(v == 1 for v in sh[d:])
            kinds[k] = "full" if full else ("const" if const else None)
            ok = ok and kinds[k] is not None
        if not ok:
            break
        inner *= out[d]
    if inner == 1:
        return 1, ["const" if math.prod(sh) == 1 else "gather" for sh in shapes]
    shapes_kinds = []
    for sh in shapes:
        d = len(out) - 1
        suffix = 1
        while d >= 0 and suffix < inner:
            suffix *= out[d]
            d -= 1
        start = d + 1
        shapes_kinds.append("full" if sh[start:] == out[start:] else "const")
    return inner, shapes_kinds


def cpp(plan):
    names = [o.name for o in plan.operands]
    inner, kinds = _inner_extent(plan)
    setup, args = [], []
    for o, kind in zip(plan.operands, kinds):
        if kind == "full":
            setup.append(f"const float* p_{o.name} = {o.name} + ({offset(o.shape, plan.out_shape, 'base')});")
            args.append(f"p_{o.name}[j]")
        elif kind == "const":
            setup.append(f"const float s_{o.name} = {o.name}[{offset(o.shape, plan.out_shape, 'base')}];")
            args.append(f"s_{o.name}")
        else:
            args.append(f"{o.name}[{offset(o.shape, plan.out_shape, '(base + j)')}]")
    return (
        CPP_PRELUDE
        + op_function("fused_op", [f"LOAD_{n}" for n in names], plan.body, qualifier="static inline ")
        + render(
            "elementwise.cpp",
            "run",
            pointers=pointers(names),
            outer=math.prod(plan.out_shape) // inner,
            inner=inner,
            parallel=PARALLEL_ELEMENTS,
            setup="\n        ".join(setup),
            args=", ".join(args),
        )
    )
