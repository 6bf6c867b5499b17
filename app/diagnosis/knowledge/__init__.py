"""What the diagnosis engine knows of each server, as rows of data: readiness lines, throughput
figures, wrappers, benign lines and launch lines. Each row carries an example line in the
engine's own format and where such a line comes from; tests run every example through the
engine."""
