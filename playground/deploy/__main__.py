from playground.deploy.production import main

main()
