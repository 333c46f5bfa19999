"""The vector unit's read loops: which pixel each cycle reads, and its read address."""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hwgen.pe import register
from hwgen.timing import DIGITS
from hwgen.vector.params import CONTROL, LOOPS, VectorParams


class VecReadLoops(wiring.Component):
    """Issues one read of one pixel's lanes per cycle, loops (outer to inner) `oh, ow, group, kh,
    kw, operand` (those the ops run; a loop the configured ops never run has count 0 and is
    always at its last iteration): nested counters and each loop's offset (its count times its
    step, summed as it advances, 0 when it restarts; `ow` steps by 1: its count, and `operand`
    runs twice: 0 or its step); the read address is the sum of the offsets (with
    `address_register` in a register: the read a cycle later). With serial products COPY / ADD
    reads are `DIGITS` cycles apart; with the shared lane windows start at least `interval`
    cycles apart.

    - `start`: a command is accepted; `nonempty`: it has outputs; `row_count`: its rows - 1;
    - `last`, `step`, `stride`, `window`: the command's loop bounds, steps, stride and kind;
    - `terms`: the terms of the read's pixel pointer (`VectorParams.terms_layout`);
    - `control`: the read's control (`valid`: a read this cycle; `slice` and `odd` left 0).
    """

    def __init__(self, params: VectorParams):
        self.params = params
        super().__init__({
            "start": In(1),
            "nonempty": In(1),
            "row_count": In(params.bounds["oh"]),
            "last": In(params.last_layout()),
            "step": In(params.step_layout()),
            "stride": In(3),
            "window": In(1),
            "terms": Out(params.terms_layout()),
            "control": Out(CONTROL),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        loops, bounds, stride = p.loops, p.bounds, self.stride
        last = {name: self.last[name] for name in loops[1:]}
        step = {name: self.step[name] for name in loops}
        running = Signal()  # reads to issue
        count = {name: Signal(bounds[name], name=f"{name}_count") for name in loops}
        offset = {name: Signal(p.pixel_bits, name=f"{name}_offset") for name in loops if name not in ("ow", "operand")}
        # `kw` takes phase `kw % stride` (its offset: phase times the pitch) and column `kw // stride`
        phase, column = Signal(3), Signal(bounds["kw"])
        at_last = {name: count[name] == last[name] if name in last else Const(1) for name in LOOPS}
        at_last[loops[0]] = count[loops[0]] == 0
        # the next read is a window's first (its `kh`, `kw`, `operand` counts at 0): a register,
        # set on accept and after a window's last read (timing)
        first = Signal(init=1)
        window_last = at_last["kh"] & at_last["kw"] & at_last["operand"]
        go = self._paced(m, running, first)  # a read this cycle
        with m.If(self.start):
            m.d.sync += running.eq(self.nonempty)
        with m.If(self.start):
            m.d.sync += [first.eq(1), phase.eq(0), column.eq(0), *(count[name].eq(0) for name in loops[1:]),
                         count[loops[0]].eq(self.row_count), *(o.eq(0) for o in offset.values())]
        with m.Elif(go):
            m.d.sync += first.eq(window_last)
            # a loop moves when every inner one is at its last iteration: it advances, or restarts
            # from 0 at its own last (the outermost one then ends the command). Each loop's enable
            # is its inner loops' compares alone, in one AND (timing).
            for level, name in enumerate(loops):
                inner_last = Cat(Const(1), *(at_last[inner] for inner in loops[level + 1:])).all()
                with m.If(inner_last & ~at_last[name]):
                    m.d.sync += count[name].eq(count[name] + (-1 if level == 0 else 1))
                    if name == "kw":
                        next_column = (phase + 1)[:len(phase)] == stride
                        m.d.sync += [phase.eq(Mux(next_column, 0, phase + 1)), column.eq(column + next_column),
                                     offset[name].eq(Mux(next_column, 0, offset[name] + step[name]))]
                    elif name in offset:
                        m.d.sync += offset[name].eq(offset[name] + step[name])
                with m.If(inner_last & at_last[name]):
                    if level == 0:
                        m.d.sync += running.eq(0)
                    else:
                        m.d.sync += count[name].eq(0)
                        if name in offset:
                            m.d.sync += offset[name].eq(0)
                        if name == "kw":
                            m.d.sync += [phase.eq(0), column.eq(0)]

        terms = {name: offset.get(name, count[name]) for name in loops if name != "operand"}
        if p.windows:
            terms["column"] = column
        if "operand" in loops:
            terms["operand"] = Mux(count["operand"], step["operand"], 0)
        control = self.control
        m.d.comb += [*(self.terms[name].eq(term) for name, term in terms.items()),
                     control.valid.eq(go), control.first.eq(first), control.last.eq(window_last),
                     control.final.eq(Cat(*at_last.values()).all()),
                     control.operand.eq(count.get("operand", 0)), control.group.eq(count["group"])]
        return m

    def _paced(self, m: Module, running: Signal, first: Signal):
        """Whether a read goes ahead (`running`, no pause): serial products: COPY / ADD reads
        `DIGITS` cycles apart; the shared lane: windows (from a `first` read) at least `interval`
        cycles apart."""
        p, go = self.params, running
        pauses = ([(Signal(range(DIGITS), name="read_pause"), Const(1), Mux(self.window, 0, DIGITS - 1))]
                  if p.serial_products else [])
        if p.interval > 1:
            pauses.append((Signal(range(p.interval), name="window_pause"), first, p.interval - 1))
        for pause, applies, _ in pauses:
            go = go & (~applies | (pause == 0))
        for pause, applies, length in pauses:
            with m.If(go & applies):
                m.d.sync += pause.eq(length)
            with m.Elif(pause != 0):
                m.d.sync += pause.eq(pause - 1)
        return go


class VecReadAddress(wiring.Component):
    """The read's pixel pointer, the sum of its `terms` (a balanced tree of adders), and from it the
    input bank address; with `address_register` the adder tree ends in flip-flops and the read
    comes a cycle later.

    - `terms`, `control`: the read loops' pointer terms and control;
    - `issue`: the read's control, with the pixel's `slice` within its word and whether the word
      is `odd`; `address`: its input bank address (the word // 2).
    """

    def __init__(self, params: VectorParams):
        self.params = params
        super().__init__({
            "terms": In(params.terms_layout()),
            "control": In(CONTROL),
            "issue": Out(CONTROL),
            "address": Out(params.pixel_bits - params.log_cols - 1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        terms = [self.terms[name] for name, _ in self.terms.shape()]
        while len(terms) > 1:  # a balanced tree of adders
            terms = [(a + b)[:p.pixel_bits] for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) & ~1:]
        pointer = terms[0]
        word = pointer[p.log_cols:]
        issue = Signal(CONTROL)
        m.d.comb += [issue.eq(self.control), issue.slice.eq(pointer[:p.log_cols]), issue.odd.eq(word[0])]
        address = word[1:]
        if p.address_register:  # the read a cycle later
            m.d.sync += self.issue.eq(issue)
            m.d.comb += self.address.eq(register(m, address, "address"))
        else:
            m.d.comb += [self.issue.eq(issue), self.address.eq(address)]
        return m
