"""The user's own code: a Dataset from dataset.python, functions of
`python` stages, and the folders of loader.python_path.

A Dataset whose `transform` is a torchvision Compose gets each of its
transforms timed as a column of its own, named after its class (Resize,
Resize_2 for the second); any other Dataset gets one "getitem" column for
the whole __getitem__."""
import importlib
import os
import sys

from .errors import ConfigError


def add_python_path(python_path, config_dir):
    """Puts loader.python_path's folders (":"-separated, relative to the
    config's folder) in front of sys.path."""
    folders = [p for p in str(python_path or "").split(":") if p]
    for folder in reversed(folders):
        if not os.path.isabs(folder):
            folder = os.path.join(config_dir or ".", folder)
        sys.path.insert(0, os.path.abspath(folder))


def import_callable(spec, option):
    """The object "module:attr.attr" names; ConfigError(option) if none."""
    module_name, _, attr = str(spec or "").partition(":")
    if not module_name or not attr:
        raise ConfigError(option, "%r is not \"module:callable\"" % spec)
    try:
        obj = importlib.import_module(module_name)
    except Exception as e:  # the user's module may raise anything on import
        raise ConfigError(option, "cannot import %s: %s: %s"
                          % (module_name, type(e).__name__, e)) from e
    missing = object()
    for part in attr.split("."):
        owner, obj = obj, getattr(obj, part, missing)
        if obj is missing:
            raise ConfigError(option, "module %s has no %s" % (module_name, attr))
        if obj is None:
            raise ConfigError(option, "%s.%s is None, not a callable"
                              % (getattr(owner, "__name__", module_name), part))
    if not callable(obj):
        raise ConfigError(option, "%s is not callable" % spec)
    return obj


def expand_args(args, dataset_path):
    """dataset.args with "${dataset.path}" in its strings replaced by the
    dataset's path as pbench resolved it (a shipped config's data may be in
    the cache folder, wherever pbench runs)."""
    if isinstance(args, str):
        return args.replace("${dataset.path}", dataset_path)
    if isinstance(args, dict):
        return {k: expand_args(v, dataset_path) for k, v in args.items()}
    if isinstance(args, list):
        return [expand_args(v, dataset_path) for v in args]
    return args


def make_user_dataset(dataset_config):
    """Calls dataset.python with dataset.args as keyword arguments; the
    result must be a map-style Dataset (__getitem__ and __len__)."""
    make = import_callable(dataset_config.get("python"), "dataset.python")
    args = dataset_config.get("args") or {}
    if not isinstance(args, dict):
        raise ConfigError("dataset.args", "dataset.args is an object of keyword arguments")
    args = expand_args(args, dataset_config.get("path") or "")
    try:
        dataset = make(**args)
    except Exception as e:
        raise ConfigError("dataset.python", "%s(**dataset.args) raised %s: %s"
                          % (dataset_config.get("python"), type(e).__name__, e)) from e
    if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
        raise ConfigError("dataset.python", "%s returned a %s, not a map-style Dataset "
                          "(__getitem__ and __len__)"
                          % (dataset_config.get("python"), type(dataset).__name__))
    return dataset


def compose_of(dataset):
    """The dataset's transform if it is a torchvision Compose, else None."""
    from torchvision import transforms
    transform = getattr(dataset, "transform", None)
    return transform if isinstance(transform, transforms.Compose) else None


def transform_names(compose):
    """Column names for a Compose's transforms: class names, deduplicated."""
    from .stages import unique_names
    return unique_names([type(t).__name__ for t in compose.transforms])


def sample_file(dataset, index):
    """The file of a user dataset's sample for error reports: the first
    field of dataset.samples / imgs / files / paths [index], or ""."""
    for attr in ("samples", "imgs", "files", "paths"):
        items = getattr(dataset, attr, None)
        try:
            item = items[index]
        except Exception:
            continue
        if isinstance(item, (tuple, list)) and item:
            item = item[0]
        if isinstance(item, (str, bytes, os.PathLike)):
            return os.fsdecode(item)
    return ""
