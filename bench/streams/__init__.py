"""Enforcing on streamed and long answers: the long-answer scenario, prejudge's wait, and
the memory of relaying one huge answer.
"""
