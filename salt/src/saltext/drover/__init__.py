"""saltext-drover: Salt states and an execution module over the drover.fleet collection's core.

The core (deciders, appliers, adapters, store) is not copied here: `saltext.drover.core` imports it from the
installed collection (see docs/salt.md).
"""

__version__ = '0.1.0'
