"""Layers scheduled across units (the host CPU and accelerator instances), pipelined over a
stream of images: costs, one discrete-event simulator, an ILP and a genetic algorithm."""
