"""Design-space exploration: sweeps of accelerator configurations (`explore.sweep`) over the
shipped or user-written spaces (`explore/spaces/*.yaml`)."""
