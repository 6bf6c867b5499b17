"""What the diagnosis engine knows of each server, as rows of data: each row has its pattern,
the engines that print such a line, an example line in their format and where it comes from
(tests/test_diagnosis_knowledge.py runs every example through the engine)."""
