"""What chapters share: the run call, parameter checks, plots, the token explorer, exercises.
"""
