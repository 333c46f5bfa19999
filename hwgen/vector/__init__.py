"""The parts of the vector unit (`hwgen.vector_unit.VectorUnit`), in the order of its pipeline:
the command (`command`), the read loops and addresses (`read_loops`), the operand reads
(`operands`), the products and the accumulation (`arithmetic`) and the results' way through
the post-processing into the accumulator bank (`write_back`); `params` holds what they share."""
