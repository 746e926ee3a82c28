"""Source syncs (SPEC §10): sources and their connectors, runs on Step Functions, what each run
did per file, which source claims which document, and the rules a remote name obeys.

``sources`` (the routes' service), ``runs`` (start, retry-failed, read back), ``tasks`` (the
state machine's steps), ``planning`` (what to do with one file), ``handoff`` (a file into the
ordinary pipeline), ``schedule`` (due runs), ``remote_names`` (R-SYNC-4), ``connectors``.
"""
