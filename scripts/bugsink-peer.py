"""A throwaway Bugsink (PyPI `bugsink`, pinned in scripts/python-peers.txt) for the tests of
Blackbox's Sentry delivery: a real Sentry-compatible server, Django on SQLite in DIR.

    bugsink-peer.py setup DIR PORT   configure, migrate, create a team and a project; print the DSN
    bugsink-peer.py serve DIR PORT   serve on 127.0.0.1:PORT until killed (events digested at once)
    bugsink-peer.py events DIR       print every stored event as JSON lines: issue title, event data
"""
import json
import os
import subprocess
import sys

command, directory = sys.argv[1], os.path.abspath(sys.argv[2])
os.environ["DJANGO_SETTINGS_MODULE"] = "bugsink_conf"
sys.path.insert(0, directory)
os.chdir(directory)
bin_directory = os.path.dirname(sys.executable)


def configure(port):
    subprocess.run(
        [os.path.join(bin_directory, "bugsink-create-conf"), "--template=local", f"--port={port}",
         "--host=127.0.0.1", "-o", "bugsink_conf.py"],
        check=True, stdout=subprocess.DEVNULL)
    with open("bugsink_conf.py", "a") as conf:
        # Ingest digests in the request (no snappea worker), and nothing is dropped for volume.
        conf.write('\nSNAPPEA = {"TASK_ALWAYS_EAGER": True}\n')
        conf.write('DATABASES["default"]["NAME"] = "' + os.path.join(directory, "db.sqlite3") + '"\n')
        conf.write('BUGSINK["MAX_EVENTS_PER_PROJECT_PER_5_MINUTES"] = 100000\n')


def django():
    import django as framework
    framework.setup()


if command == "setup":
    configure(sys.argv[3])
    subprocess.run([os.path.join(bin_directory, "bugsink-manage"), "migrate", "--no-input"],
                   check=True, stdout=subprocess.DEVNULL)
    django()
    from teams.models import Team
    from projects.models import Project
    team = Team.objects.create(name="blackbox-tests")
    project = Project.objects.create(team=team, name="crash-child", slug="crash-child")
    print(project.dsn)
elif command == "serve":
    os.execv(os.path.join(bin_directory, "bugsink-manage"),
             ["bugsink-manage", "runserver", f"127.0.0.1:{sys.argv[3]}", "--noreload"])
elif command == "events":
    django()
    from events.models import Event
    for event in Event.objects.order_by("digest_order"):
        print(json.dumps({
            "issue": event.issue.title(),
            "issue_id": str(event.issue_id),
            "issue_events": event.issue.digested_event_count,
            "data": event.get_parsed_data(),
        }))
else:
    sys.exit(f"unknown command {command}")
