"""pearl_verl: PEARL (pedagogically aligned RL for Socratic math tutors) as a verl plugin.

The core (this package minus ``verl_plugin``) never imports verl. Importing verl loads
``pearl_verl.verl_plugin.register`` through the ``verl.plugins`` entry point.
"""

from pearl_verl.advantage import AdvantageConfig, compute_pearl_advantage, compute_pearl_advantage_breakdown
from pearl_verl.config import PearlConfig, load_pearl_config
from pearl_verl.dims import DIMENSIONS

__version__ = "0.1.0"

__all__ = [
    "DIMENSIONS",
    "AdvantageConfig",
    "PearlConfig",
    "compute_pearl_advantage",
    "compute_pearl_advantage_breakdown",
    "load_pearl_config",
]
