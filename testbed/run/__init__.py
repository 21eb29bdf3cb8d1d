"""One run, end to end (`experiment.run_experiment`): planning, the signal lifecycle, time
dilation, the workers and probes, results and their validity. Imports the wings below it."""
