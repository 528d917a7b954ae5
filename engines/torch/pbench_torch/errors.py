"""The engine's two error kinds: a config the engine cannot run, and a bad
sample."""


class ConfigError(Exception):
    """The config asks for what the engine cannot do. option is the dotted
    key pbench names the line of (pipeline[2].interpolation,
    loader.in_order, dataset.python); message a sentence."""

    def __init__(self, option, message):
        super().__init__(message)
        self.option = option
        self.message = message


class SampleError(Exception):
    """A sample that cannot be decoded or transformed: a bad sample,
    dropped or fatal as run.on_error says."""
