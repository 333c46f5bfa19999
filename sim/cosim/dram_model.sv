// The external memory of a co-simulation: the Verilog twin of `sim.memory_model.MemoryModel`,
// cycle for cycle, so that Icarus and Verilator run without Python in every clock cycle.
//
// Each rising edge does what one iteration of `MemoryModel.process` does, in the same order:
// it reads the values the design presents before the edge, updates the model's state and drives
// its outputs right after the edge (nonblocking assignments, like the registered outputs of the
// Python model). The random stalls are not drawn here: the runner draws them with numpy's
// generator, exactly as the Python model would (`rng.random() < stall`, one draw per
// `_stalled()` call), and hands them over as a stream of bits; the model consumes the next bit
// wherever the Python model calls `_stalled()`, so the same seed gives the same stalls.
//
// Control (from the cocotb testbench):
//   restart  at an edge: load the memory image (+hwgen_dram_image=FILE, $readmemh of bus words)
//            and the stall stream (+hwgen_dram_stalls=FILE, +hwgen_dram_draws=N; none if N is 0),
//            clear every counter and queue; the next edge is the model's first cycle
//   dump     at an edge: write the memory to +hwgen_dram_dump=FILE ($writememh)
// A protocol violation prints "hwgen_dram: error: ..." and ends the simulation.
`default_nettype none

module hwgen_dram #(
    parameter integer BUS_BYTES = 2,
    parameter integer BURST_BEATS = 8,
    parameter integer BEATS_BITS = 4,
    parameter integer ADDR_BITS = 32,
    parameter integer LATENCY = 1,          // >= 1: request edge to the first edge its data can be taken
    parameter integer RATE_NUM = 1,         // beats per cycle = RATE_NUM / RATE_DEN (at most 1)
    parameter integer RATE_DEN = 1,
    parameter integer MAX_QUEUED_BEATS = 64,
    parameter integer QUEUE_BITS = 6,       // 2**QUEUE_BITS >= MAX_QUEUED_BEATS
    parameter integer BYTES = 2,            // memory size
    parameter integer STALL_WORDS = 32768   // stall stream capacity in 64-bit words
) (
    input  wire                     clk,
    input  wire                     restart,
    input  wire                     dump,
    input  wire                     rd_req_valid,
    output reg                      rd_req_ready,
    input  wire [ADDR_BITS-1:0]     rd_req_addr,
    input  wire [BEATS_BITS-1:0]    rd_req_beats,
    output reg                      rd_data_valid,
    input  wire                     rd_data_ready,
    output reg  [8*BUS_BYTES-1:0]   rd_data,
    input  wire                     wr_valid,
    output reg                      wr_ready,
    input  wire [ADDR_BITS-1:0]     wr_addr,
    input  wire [8*BUS_BYTES-1:0]   wr_data,
    input  wire [BUS_BYTES-1:0]     wr_mask,
    input  wire                     wr_last,
    output reg  [63:0]              read_requests,
    output reg  [63:0]              read_beats,
    output reg  [63:0]              bytes_read,
    output reg  [63:0]              write_beats,
    output reg  [63:0]              bytes_written
);
    localparam integer WORDS = (BYTES + BUS_BYTES - 1) / BUS_BYTES;
    localparam integer QUEUE = 1 << QUEUE_BITS;

    reg [8*BUS_BYTES-1:0] mem [0:WORDS-1];
    reg [63:0] stalls [0:STALL_WORDS-1];
    string image_path, dump_path, stalls_path;
    reg [63:0] draws;           // valid bits in the stall stream
    reg [63:0] drawn;           // bits consumed

    // requested, undelivered reads: first edge allowed, next address, beats left
    reg [63:0] queue_first [0:QUEUE-1];
    reg [63:0] queue_addr [0:QUEUE-1];
    reg [63:0] queue_beats [0:QUEUE-1];
    reg [QUEUE_BITS-1:0] head, tail;
    integer queued, queued_beats;

    reg [63:0] cycles;
    reg burst_open;             // a write burst has begun: its next address and beats so far
    reg [63:0] burst_addr, burst_beats;
    integer credit;             // token bucket in units of 1 / RATE_DEN beat
    reg req_ready_q, rd_valid_q, wr_ready_q, read_last;
    reg wrote, write_pending, stalled;
    reg [8*BUS_BYTES-1:0] word;
    integer i;

    initial begin
        rd_req_ready = 0; rd_data_valid = 0; wr_ready = 0; rd_data = 0;
        if (!$value$plusargs("hwgen_dram_image=%s", image_path)) image_path = "";
        if (!$value$plusargs("hwgen_dram_dump=%s", dump_path)) dump_path = "";
        if (!$value$plusargs("hwgen_dram_stalls=%s", stalls_path)) stalls_path = "";
        if (!$value$plusargs("hwgen_dram_draws=%d", draws)) draws = 0;
    end

    task fail(input string message);
        begin
            $display("hwgen_dram: error: %s (cycle %0d)", message, cycles);
            $finish;
        end
    endtask

    task check_burst(input [63:0] addr, input [63:0] beats);
        begin
            if (addr % BUS_BYTES != 0) fail($sformatf("unaligned address 0x%0h", addr));
            else if (beats < 1 || beats > BURST_BEATS) fail($sformatf("burst of %0d beats", beats));
            else if (addr / (BUS_BYTES * BURST_BEATS) != (addr + beats * BUS_BYTES - 1) / (BUS_BYTES * BURST_BEATS))
                fail($sformatf("burst at 0x%0h of %0d beats crosses a burst block", addr, beats));
            else if (addr + beats * BUS_BYTES > BYTES) fail($sformatf("access at 0x%0h beyond the memory", addr));
        end
    endtask

    // `MemoryModel._stalled`: the next bit of the stream, if there is one
    task draw(output reg bit_out);
        begin
            bit_out = 0;
            if (draws != 0) begin
                if (drawn >= draws) fail($sformatf("stall stream of %0d draws exhausted", draws));
                else bit_out = stalls[drawn[63:6]][drawn[5:0]];
                drawn = drawn + 1;
            end
        end
    endtask

    always @(posedge clk) begin
        if (restart) begin
            $readmemh(image_path, mem);
            if (draws != 0) $readmemh(stalls_path, stalls);
            drawn = 0;
            head = 0; tail = 0; queued = 0; queued_beats = 0;
            cycles = 0; burst_open = 0; burst_addr = 0; burst_beats = 0; credit = 0;
            req_ready_q = 0; rd_valid_q = 0; wr_ready_q = 0; read_last = 0;
            rd_data <= 0;
            read_requests <= 0; read_beats <= 0; bytes_read <= 0; write_beats <= 0; bytes_written <= 0;
        end else begin
            cycles = cycles + 1;
            if (req_ready_q && rd_req_valid) begin
                check_burst(rd_req_addr, rd_req_beats);
                queue_first[tail] = cycles + LATENCY;
                queue_addr[tail] = rd_req_addr;
                queue_beats[tail] = rd_req_beats;
                tail = tail + 1;
                queued = queued + 1;
                queued_beats = queued_beats + rd_req_beats;
                read_requests <= read_requests + 1;
            end
            if (rd_valid_q && rd_data_ready) begin
                rd_valid_q = 0;
                queue_addr[head] = queue_addr[head] + BUS_BYTES;
                queue_beats[head] = queue_beats[head] - 1;
                queued_beats = queued_beats - 1;
                if (queue_beats[head] == 0) begin
                    head = head + 1;
                    queued = queued - 1;
                end
                read_beats <= read_beats + 1;
                bytes_read <= bytes_read + BUS_BYTES;
            end
            wrote = wr_ready_q && wr_valid;
            if (wrote) begin
                if (!burst_open) begin
                    burst_open = 1; burst_addr = wr_addr; burst_beats = 0;
                end
                if (wr_addr != burst_addr) fail($sformatf("write beat at 0x%0h, expected 0x%0h", wr_addr, burst_addr));
                check_burst(wr_addr - burst_beats * BUS_BYTES, burst_beats + 1);
                word = mem[wr_addr / BUS_BYTES];
                for (i = 0; i < BUS_BYTES; i = i + 1)
                    if (wr_mask[i]) word[8*i +: 8] = wr_data[8*i +: 8];
                mem[wr_addr / BUS_BYTES] = word;
                write_beats <= write_beats + 1;
                bytes_written <= bytes_written + $countones(wr_mask);
                if (wr_last) burst_open = 0;
                else begin
                    burst_addr = wr_addr + BUS_BYTES; burst_beats = burst_beats + 1;
                end
                credit = credit - RATE_DEN;
                read_last = 0;
            end
            credit = credit + RATE_NUM < RATE_DEN + RATE_NUM ? credit + RATE_NUM : RATE_DEN + RATE_NUM;
            if (!rd_valid_q) begin
                write_pending = wr_valid && !wrote && read_last;
                if (queued != 0 && queue_first[head] <= cycles + 1 && credit >= RATE_DEN && !write_pending) begin
                    draw(stalled);
                    if (!stalled) begin
                        rd_valid_q = 1;
                        read_last = 1;
                        credit = credit - RATE_DEN;
                        rd_data <= mem[queue_addr[head] / BUS_BYTES];
                    end
                end
            end
            wr_ready_q = 0;
            if (credit >= RATE_DEN) begin
                draw(stalled);
                wr_ready_q = !stalled;
            end
            req_ready_q = 0;
            if (queued_beats < MAX_QUEUED_BEATS) begin
                draw(stalled);
                req_ready_q = !stalled;
            end
        end
        rd_data_valid <= rd_valid_q;
        wr_ready <= wr_ready_q;
        rd_req_ready <= req_ready_q;
        if (dump) $writememh(dump_path, mem);
    end
endmodule

`default_nettype wire
