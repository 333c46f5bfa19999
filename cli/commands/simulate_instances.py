"""`hwgen simulate --hw CFG` for a configuration with several `instances`: the scheduler's
stages (`scheduler.instances`) compiled one program per instance and run as a pipeline over a
stream of images in the Amaranth simulator (`sim.pipeline_sim`); each image checked against the
golden model, the measured period against the program model's (`predicted_period`) and the
scheduler's."""
from __future__ import annotations

import argparse
import json

import numpy as np
from rich.table import Table

from cli.commands.infer import read_input
from cli.cycle_progress import CycleProgress
from common.console import make_console
from common.errors import InputError
from hwgen.config import AcceleratorConfig
from planner.compile.stages import predicted_period, predicted_stream_cycles
from planner.ir import Network
from scheduler.instances import scheduled_layout
from sim.golden import run_quantized
from sim.pipeline_sim import run_pipeline

DEFAULT_IMAGES = 4
PIPELINE_ENGINE = "amaranth"


def check_arguments(args: argparse.Namespace, config: AcceleratorConfig) -> int:
    """The images to stream; one error for what a pipeline run does not take."""
    if args.engine != PIPELINE_ENGINE:
        raise InputError(f"configuration {config.name!r} has {config.instances} instances; --engine {args.engine} "
                         f"runs one; allowed: --engine {PIPELINE_ENGINE} (the instances and their shared memory "
                         "in the Amaranth simulator)")
    if args.layer is not None or args.vcd is not None:
        raise InputError(f"configuration {config.name!r} has {config.instances} instances: --layer and --vcd are "
                         "for one instance; allowed: neither")
    images = args.images or DEFAULT_IMAGES
    if images < 2:
        raise InputError(f"--images {images}: allowed: at least 2 (a period is measured between images)")
    return images


def stream(args: argparse.Namespace, net: Network, images: int) -> list[np.ndarray]:
    """`--input`'s first `images` samples, else seeded random int8 images."""
    if args.input is None:
        rng = np.random.default_rng(0)
        return [rng.integers(-128, 128, net.input_shape).astype(np.int8) for _ in range(images)]
    samples = read_input(args.input, net)
    if len(samples) < images:
        raise InputError(f"--input {args.input}: {len(samples)} samples for --images {images}; allowed: at least "
                         f"{images}")
    return list(samples[:images])


def run_instances(args: argparse.Namespace, net: Network, config: AcceleratorConfig) -> int:
    images = check_arguments(args, config)
    inputs = stream(args, net, images)
    figures, layout = scheduled_layout(net, config, images)
    predicted = predicted_period(layout)
    clock = config.clock_mhz * 1e6
    expected = predicted_stream_cycles(layout, images)
    with CycleProgress(f"{PIPELINE_ENGINE}: {net.name} on {len(layout.stages)} instances", int(expected)) as progress:
        run = run_pipeline(layout, inputs, max_cycles=max(2_000_000, int(4 * expected)), progress=progress)
    output = layout.stages[-1].compilation.network.outputs[0]
    exact = [bool(np.array_equal(y, run_quantized(net, x)[output])) for x, y in zip(inputs, run.outputs)]
    record = {
        "network": net.name, "config": config.name, "instances": config.instances, "engine": PIPELINE_ENGINE,
        "images": images, "bit_exact_images": sum(exact), "bit_exact": all(exact),
        "stages": [{"layers": list(stage), "predicted_cycles": s.compilation.prediction.cycles,
                    "measured_cycles": [end - start for start, end in zip(run.starts[i], run.ends[i])]}
                   for i, (stage, s) in enumerate(zip(figures.stages, layout.stages))],
        "cycles": run.cycles, "period_cycles": run.period(), "predicted_period_cycles": predicted,
        "scheduler_period_cycles": figures.period_s * clock,
    }
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        show(record, f"{net.name} on {config.instances} instances of {config.name} ({images} images, Amaranth "
             "simulation)")
    return 0 if record["bit_exact"] else 1


def show(record: dict, title: str) -> None:
    """A pipeline run's record (this command's, or `hwgen run`'s on a board): its stages, the
    images equal to the golden model and the period, measured (where known) against the models."""
    table = Table(title=title)
    measured_stages = "measured_cycles" in record["stages"][0]
    for column, justify in (("stage", "right"), ("layers", "left"), ("predicted", "right"),
                            *((("measured", "left"),) if measured_stages else ())):
        table.add_column(column, justify=justify, overflow="fold")
    for i, stage in enumerate(record["stages"]):
        span = stage["layers"][0] if len(stage["layers"]) == 1 else f"{stage['layers'][0]} .. {stage['layers'][-1]}"
        measured = [", ".join(f"{c:,}" for c in stage["measured_cycles"])] if measured_stages else []
        table.add_row(str(i), span, f"{stage['predicted_cycles']:,}", *measured)
    console = make_console()
    console.print(table)
    measured, predicted, scheduled = (record["period_cycles"], record["predicted_period_cycles"],
                                      record["scheduler_period_cycles"])
    console.print(f"bit-exact vs golden: {record['bit_exact_images']} of {record['images']} images; "
                  f"{record['cycles']:,} cycles in all")
    if measured is None:
        console.print(f"period: program model {predicted:,.1f} cycles; scheduler {scheduled:,.1f}")
    else:
        console.print(f"period: measured {measured:,.1f} cycles; program model {predicted:,.1f} "
                      f"({(measured - predicted) / predicted:+.1%}); scheduler {scheduled:,.1f} "
                      f"({(measured - scheduled) / scheduled:+.1%})")
