"""Partially observed control: recurrent agents on tasks with hidden velocities."""
