"""Write the ONNX Runtime CPU profiles of this folder (generated here, see README.md).

Usage: ``python generate_ort8_profiles.py {if,loop,parallel,sequential,threads}``; prints the profile's path
(``<mode>_<date>.json`` in the working directory). Needs onnx, onnxruntime and numpy."""

from __future__ import annotations

import sys
import threading

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

N = 128


def _weight(name: str, seed: int) -> TensorProto:
    values = np.random.default_rng(seed).standard_normal((N, N)).astype(np.float32) * 0.05
    return numpy_helper.from_array(values, name)


def _matrix(name: str) -> helper.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [N, N])


def _chain(prefix: str, k: int, inp: str, out: str, seed: int) -> tuple[list, list]:
    nodes, inits, prev = [], [], inp
    for i in range(k):
        inits.append(_weight(f"{prefix}W{i}", seed + i))
        target = out if i == k - 1 else f"{prefix}t{i}"
        nodes.append(
            helper.make_node("MatMul", [prev, f"{prefix}W{i}"], [target], name=f"/{prefix}/MatMul_{i}")
        )
        prev = target
    return nodes, inits


def branchy() -> helper.ModelProto:
    """Four independent chains of three MatMuls, summed: what ORT_PARALLEL may run side by side."""
    nodes, inits, outs = [], [], []
    for b in range(4):
        chain, weights = _chain(f"b{b}", 3, "X", f"b{b}_out", 10 * b)
        nodes += chain
        inits += weights
        outs.append(f"b{b}_out")
    nodes.append(helper.make_node("Sum", outs, ["Y"], name="/Sum"))
    graph = helper.make_graph(nodes, "branchy", [_matrix("X")], [_matrix("Y")], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def if_model() -> helper.ModelProto:
    then_nodes, then_inits = _chain("then", 3, "X", "then_out", 1)
    else_nodes, else_inits = _chain("else", 1, "X", "else_out", 9)
    then_graph = helper.make_graph(then_nodes, "then", [], [_matrix("then_out")], then_inits)
    else_graph = helper.make_graph(else_nodes, "else", [], [_matrix("else_out")], else_inits)
    nodes = [
        helper.make_node("Relu", ["X0"], ["X"], name="/pre/Relu"),
        helper.make_node("If", ["C"], ["Y0"], name="/If", then_branch=then_graph, else_branch=else_graph),
        helper.make_node("Relu", ["Y0"], ["Y"], name="/post/Relu"),
    ]
    inputs = [_matrix("X0"), helper.make_tensor_value_info("C", TensorProto.BOOL, [])]
    graph = helper.make_graph(nodes, "ifm", inputs, [_matrix("Y")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def loop_model() -> helper.ModelProto:
    body_nodes, body_inits = _chain("body", 2, "x_in", "x_out", 3)
    body_nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"], name="/body/Identity"))
    body = helper.make_graph(
        body_nodes,
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            _matrix("x_in"),
        ],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), _matrix("x_out")],
        body_inits,
    )
    node = helper.make_node("Loop", ["M", "", "X"], ["Y"], name="/Loop", body=body)
    inputs = [helper.make_tensor_value_info("M", TensorProto.INT64, []), _matrix("X")]
    graph = helper.make_graph([node], "loopm", inputs, [_matrix("Y")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def session(
    model: helper.ModelProto, prefix: str, parallel: bool = False, inter: int = 1
) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = prefix
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = inter
    if parallel:
        options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def main(mode: str) -> str:
    x = np.random.default_rng(0).standard_normal((N, N)).astype(np.float32)
    if mode == "if":
        s = session(if_model(), "if")
        for cond in (True, False, True):
            s.run(None, {"X0": x, "C": np.array(cond)})
    elif mode == "loop":
        s = session(loop_model(), "loop")
        for trips in (3, 2):
            s.run(None, {"X": x, "M": np.array(trips, dtype=np.int64)})
    elif mode in ("parallel", "sequential"):
        s = session(branchy(), mode, parallel=mode == "parallel", inter=4 if mode == "parallel" else 1)
        for _ in range(3):
            s.run(None, {"X": x})
    elif mode == "threads":
        s = session(branchy(), "threads")

        def runs() -> None:
            for _ in range(3):
                s.run(None, {"X": x})

        threads = [threading.Thread(target=runs) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    return s.end_profiling()


if __name__ == "__main__":
    print(main(sys.argv[1]))
