"""The parts of the convolution engine (`hwgen.conv_engine.ConvEngine`): the command
(`command`), the loop counters and their end flags (`loops`), when steps enter the PE array
(`schedule`), the input pointers (`pointers`), the reads that feed the array (`feed`), the array's
drain into the post-processing (`drain`) and the accumulator writes (`write`); `params` holds
what they share."""
