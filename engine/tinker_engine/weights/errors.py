"""The one error a merge raises for bad input: its message names the file, tensor or option at fault."""


class MergeError(Exception):
    pass
