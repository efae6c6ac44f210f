"""traindoc: executable incident runbooks for large distributed training jobs.

``traindoc.load(paths)`` reads an incident's logs into an ``Incident`` (pandas tables);
``traindoc.diagnose.<class>`` turns an Incident into a ``Report``. Imports without torch.
"""

from .incident import Incident
from .reader import NoInputError, load, load_or_fail

__version__ = "0.1.0"

__all__ = ["Incident", "NoInputError", "__version__", "load", "load_or_fail"]
