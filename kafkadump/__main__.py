from kafkadump.cli import main

main()
