"""The engine's two error kinds: a config the engine cannot run, and a bad
sample; and sent(), how the engine reads a value of the config pbench sent."""


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


def sent(options, key, where):
    """options[key]: a value of the resolved config pbench sends (every
    option of a section, a stage or its decoder, its default filled in), so
    the engine keeps no copy of pbench's defaults. A key pbench did not
    send is a ConfigError naming it (where.key)."""
    try:
        return options[key]
    except (KeyError, TypeError):
        raise ConfigError("%s.%s" % (where, key) if where else key,
                          "pbench sent no value for %s (a config from another pbench?)" % key)
