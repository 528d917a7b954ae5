"""What the result records of the engine's software (`ready`.versions)."""
import sys


def module_version(name):
    """The module's __version__, or "" when it is not installed."""
    try:
        module = __import__(name)
    except ImportError:
        return ""
    return str(getattr(module, "__version__", ""))


def versions():
    """{"python", "torch", "torchvision", "pillow", "av"} as strings."""
    return {"python": sys.version.split()[0], "torch": module_version("torch"),
            "torchvision": module_version("torchvision"), "pillow": module_version("PIL"),
            "av": module_version("av")}
