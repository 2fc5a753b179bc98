"""Tests of the offline environment checks (`tracec check`)."""
