"""The bottom layer: the data model and helpers every other layer builds on.

Messages, ``State``, tools, activity and workflow payloads, the agent spec, serialisation by
import path, the wire names, settings, the data converter and the S3 client. Nothing here runs
workflow code or knows a hook family. See DESIGN.md "Layers".
"""
