"""Chat files and conversation attachments (SPEC §12, R-ACC-4, R-PARSE-4; seed 001).

``files`` owns a chat file from upload to deletion (validate, classify, parse, store,
record); ``conversations`` the conversations and their messages (a message links only
its sender's own unlinked files); ``attachments`` grading an attached file by its
tokens and the work that indexes and summarises a large one, off the request, in steps a
restart or a redelivery resumes or fails but never leaves stuck; ``overview`` the
map-reduce (or extractive) overview; ``assembly`` what the model reads for a question
(R-CHAT-3) and the reference an agent with a workspace gets instead; ``lifecycles``
removing, deleting and registering (R-CHAT-4). Every row is its owner's only: another
user's id is answered exactly like an absent one.
"""
