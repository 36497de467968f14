"""The capacity plan of a verl recipe (``pearl-verl plan``, ``doctor --cluster``'s memory check) and its model sizes."""
