"""Building and cleaning a dataset (paper §3.2): simulate, preprocess, LLM pre-screen with FairEval, refine.

Every stage reads and writes JSONL files whose lines are the records of :mod:`pipeline.curation.records`;
``h2h validate`` knows each of them.
"""
