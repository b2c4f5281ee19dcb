#!/usr/bin/python3
"""Exports PyTorch models to ONNX: the models of hetcl specs (models/*.json), built exactly as
tools/bench_torch.py builds them (same layers, paddings, activations, a softmax at the end) with
seeded random weights, and optionally torchvision's MobileNetV2, ResNet-18 and SqueezeNet 1.1
(random weights; only when python3-torchvision is installed). Nothing is downloaded.

    /usr/bin/python3 tools/export_onnx.py --model models/mlp.json --model models/lenet.json \
        --out-dir build/onnx [--vision mobilenet_v2,resnet18,squeezenet1_1]

Each file is <out-dir>/<name>.onnx with input "input" [batch, ...] and output "output"
[batch, classes], the batch a dynamic axis (the ONNX Runtime baseline tools/bench_ort.js runs
the same file at batch 1 and 64). --weights takes a safetensors checkpoint per --model (tensors
named as in the spec: layers.<i>.weight/bias), e.g. the one hetcl trained, so that both sides
compute the same function; without it the weights are PyTorch's default init after
torch.manual_seed(--seed) (speed does not depend on the values).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

VISION = ("mobilenet_v2", "resnet18", "squeezenet1_1")


def fail(msg):
    print("export_onnx: " + msg, file=sys.stderr)
    sys.exit(2)


def export(model, in_shape, path, opset):
    import torch
    x = torch.rand([1] + list(in_shape))
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, x, tmp, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          opset_version=opset, do_constant_folding=True)
    os.replace(tmp, path)
    print(f"export_onnx: {path}: input {[ 'batch'] + list(in_shape)}, "
          f"{sum(p.numel() for p in model.parameters())} parameters, opset {opset}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", action="append", default=[], help="hetcl model spec (repeatable)")
    ap.add_argument("--weights", action="append", default=[], help="checkpoint per --model, in order")
    ap.add_argument("--vision", default="",
                    help="comma-separated torchvision models: " + ", ".join(VISION))
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--opset", type=int, default=13)
    args = ap.parse_args()
    vision = [v for v in args.vision.split(",") if v]
    for v in vision:
        if v not in VISION:
            fail(f"--vision: unknown model {v!r}, expected one of {', '.join(VISION)}")
    if not args.model and not vision:
        fail("nothing to export: give --model SPEC and/or --vision NAMES")
    if len(args.weights) > len(args.model):
        fail(f"--weights: {len(args.weights)} given for {len(args.model)} --model")
    os.makedirs(args.out_dir, exist_ok=True)

    import torch
    import bench_torch
    for k, spec in enumerate(args.model):
        torch.manual_seed(args.seed)
        weights = bench_torch.load_safetensors(args.weights[k]) if k < len(args.weights) else None
        name, in_shape, model = bench_torch.build(spec, weights)
        export(model, in_shape, os.path.join(args.out_dir, name + ".onnx"), args.opset)
    if vision:
        try:
            import torchvision
        except ImportError:
            fail("--vision: torchvision is not installed (apt-get install python3-torchvision)")
        for v in vision:
            torch.manual_seed(args.seed)
            # weights=None: random init, nothing fetched
            model = getattr(torchvision.models, v)(weights=None).eval()
            export(model, [3, 224, 224], os.path.join(args.out_dir, v + ".onnx"), args.opset)


if __name__ == "__main__":
    main()
