"""The people's side of conversations: the ``agent send / chat / cancel`` commands, the runs
waiting for a reply (``agent pending --replies``) and the inbox's conversation pages."""
