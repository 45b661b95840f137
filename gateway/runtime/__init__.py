"""What one running process owns: the gateway's resources, its client keys, and the scoring
runtime that starts and stops them.
"""
