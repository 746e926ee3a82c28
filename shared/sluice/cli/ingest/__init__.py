"""``sluice ingest PATH --kb ID``: send a file or a folder to a running API and follow it (R-OPS-2).

The API is the local runtime by default (``sluice local up``, with a token minted
from its data directory's secret as ``sluice local token`` does) or any
deployment (``--api URL --token T``, or ``SLUICE_API_URL``/``SLUICE_TOKEN``).

A run has three steps:

1. **Plan** (pure, see ``plan``): walk PATH (hidden files and folders are
   skipped, so are extensions the base does not index and empty files, each
   with its reason), hash each file (sha256, the ``content_hash`` the documents
   API lists), and leave out every file whose content the base already holds:
   such a document is followed, not sent again. Files up to the direct limit
   go in the request (POST /kb/{id}/documents); larger ones through a
   presigned POST straight to storage (POST /kb/{id}/uploads). Requests go through
   sluice-client (clients/python), which names each refusal by its error code.
2. **Send**, a few at a time (``--concurrency``). A 429 holds every sender for
   its Retry-After; a 503 INDEXING_PAUSED (the operator's kill switch) stops
   the run with the server's sentence and the count of files not sent.
3. **Follow** every document to ``done`` or ``error`` with a progress bar
   (plain lines when the output is not a terminal), then print the summary and
   a table of failures with their reasons. The exit status is 1 when any
   document failed, was not sent or is still processing at ``--timeout``.

Where each part is: ``walk`` (the plan, no network), ``upload`` (sending and following through the
API), ``progress`` (what is shown while it runs), ``command`` (the arguments, the run and its report).
"""

# What the CLI and the tests import from here (each defined where its part is).
from sluice.cli.ingest.command import add_parser, run
from sluice.cli.ingest.progress import progress_for
from sluice.cli.ingest.upload import Api, Halted, Refused
from sluice.cli.ingest.walk import Known, LocalFile, collect, plan

__all__ = ["Api", "Halted", "Known", "LocalFile", "Refused", "add_parser", "collect", "plan", "progress_for", "run"]
