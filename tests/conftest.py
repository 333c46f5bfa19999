"""Hypothesis profiles: `HYPOTHESIS_PROFILE=ci` (set by `.ci/run`) derandomizes the property
tests so a CI run is reproducible; local runs keep drawing new examples."""
import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
