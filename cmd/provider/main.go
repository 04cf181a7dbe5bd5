// Command provider runs the Cloud Armor provider's controllers.
package main

import "github.com/armorplane/provider-cloudarmor/cmd/provider/app"

func main() {
	app.Main(app.Provider())
}
