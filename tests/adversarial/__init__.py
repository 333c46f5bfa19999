"""The adversarial suite: bad inputs run through the real command line (`tests/test_adversarial.py`)."""
