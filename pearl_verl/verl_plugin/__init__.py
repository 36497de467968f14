"""The only verl-aware part of pearl_verl: registrations, trainer mode and launchers.

``register`` is the ``verl.plugins`` entry point; it imports every module that registers
something with verl. Nothing here is imported by the pure core.
"""

TESTED_VERL = "0.9.1"  # the verl whose private names verl_plugin/compat.py relies on
