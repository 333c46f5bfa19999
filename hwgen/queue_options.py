"""How a template's dispatch queues are made (`hwgen.sequencer` builds them), without HDL
imports: the planner's and the program model's cycle models read them."""
from __future__ import annotations

from hwgen.config import Command, Template


def queue_depth(template: Template, queue: str) -> int:
    """Entries of one dispatch queue: `template.queue_depth`, or for the compute (store) queue
    `template.compute_queue_depth` (`store_queue_depth`) when set."""
    own = {"compute": template.compute_queue_depth, "store": template.store_queue_depth}.get(queue, 0)
    return own or template.queue_depth


def runs_in_place(template: Template, queue: str) -> bool:
    """Whether a queue's unit runs the command at the queue's head in place, popping it when done
    (`template.load_command` / `template.store_command: queue`), instead of keeping a copy."""
    return {"load": template.load_command, "store": template.store_command}.get(queue) == Command.QUEUE
