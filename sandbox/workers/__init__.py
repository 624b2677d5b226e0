"""Entry points of the jailed worker processes (`python -m sandbox.workers.reference|candidate R W`)."""
