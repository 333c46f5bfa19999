"""The shared base every package stands on: the error hierarchy, atomic file output and the console.

It imports nothing of the project."""
