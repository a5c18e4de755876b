"""scripts/compose-check: build the images, run docker-compose.yml for real and check the stack end to end.

Images the machine cannot pull are replaced by local stand-ins under the same names (stand_ins.py), so the
compose file and the Dockerfile stay exactly what users run.
"""
